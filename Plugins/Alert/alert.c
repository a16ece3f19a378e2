/*
 * Alert — a sample C plug-in in controller/action form.
 *
 *   myapp://alert/show?title=Hi&message=Yo   ->  success?title=Hi&message=Yo
 *
 * Both `title` and `message` are required; a missing one is a ParameterError
 * in the plug-in's own domain ("alert"). The alert is "shown" by writing one
 * line to the host's log through api->log: a plug-in never prints to stdout,
 * which carries nothing but outcome records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcallback.h"

XCALLBACK_PLUGIN("alert", "1.0.0", "Shows an alert: myapp://alert/show?title=&message=")

/* Set once in xcallback_plugin_register, before any handler can run; only
 * read afterwards, from any thread. Valid until xcallback_plugin_shutdown. */
static const xcallback_host_api *host;
static xcallback_plugin *self;

/*
 * Reads required parameter `name`. Returns its value, or NULL after it has
 * completed `reply` with a ParameterError (the parameter is missing, or holds
 * a NUL byte that an output parameter — a C string — could not echo).
 */
static const char *required_parameter(const xcallback_request *request,
                                      xcallback_reply reply, const char *name,
                                      size_t *length)
{
    char message[128];
    const char *value = host->request_parameter(request, name, length);
    if (value == NULL) {
        snprintf(message, sizeof message, "missing required parameter '%s'", name);
        host->reply_error(reply, "ParameterError", message, NULL);
        return NULL;
    }
    if (memchr(value, '\0', *length) != NULL) {
        snprintf(message, sizeof message, "parameter '%s' contains a NUL byte", name);
        host->reply_error(reply, "ParameterError", message, NULL);
        return NULL;
    }
    return value;
}

/* Appends `value` (`length` bytes) to `out`, with control bytes, quotes and
 * backslashes escaped so that the log entry stays on one line. Returns the
 * new end of `out`, which must have room for 4 * length bytes. */
static char *append_escaped(char *out, const char *value, size_t length)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c < 0x20 || c == 0x7f) {
            *out++ = '\\';
            *out++ = 'x';
            *out++ = hex[c >> 4];
            *out++ = hex[c & 0x0f];
        } else if (c == '"' || c == '\\') {
            *out++ = '\\';
            *out++ = (char)c;
        } else {
            *out++ = (char)c;
        }
    }
    return out;
}

static void alert_show(const xcallback_request *request, xcallback_reply reply,
                       void *user_data)
{
    (void)user_data;
    size_t title_length = 0, message_length = 0;

    /* The request is valid until it is completed: read everything first. */
    const char *title = required_parameter(request, reply, "title", &title_length);
    if (title == NULL)
        return;
    const char *message = required_parameter(request, reply, "message", &message_length);
    if (message == NULL)
        return;

    /* "Show" it: one log line, alert: "TITLE" MESSAGE. */
    static const char prefix[] = "alert: \"";
    size_t capacity = sizeof prefix + 4 * (title_length + message_length) + 2;
    char *line = malloc(capacity);
    if (line != NULL) {
        char *end = line;
        memcpy(end, prefix, sizeof prefix - 1);
        end += sizeof prefix - 1;
        end = append_escaped(end, title, title_length);
        *end++ = '"';
        *end++ = ' ';
        end = append_escaped(end, message, message_length);
        *end = '\0';
        host->log(self, XCALLBACK_LOG_INFO, line);
        free(line);
    } else {
        host->log(self, XCALLBACK_LOG_WARNING, "out of memory: alert not shown");
    }

    /* Echo both back; the host copies the strings before this returns. */
    const xcallback_param output[] = {
        { "title", title },
        { "message", message },
    };
    host->reply_success(reply, output, sizeof output / sizeof output[0]);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api,
                                               xcallback_plugin *plugin)
{
    if (api == NULL || api->abi_major != XCALLBACK_ABI_MAJOR)
        return XCALLBACK_ERR_INVALID_ARGUMENT;
    host = api;
    self = plugin;
    return api->register_controller_action(plugin, "myapp", "alert", "show",
                                           alert_show, NULL);
}
