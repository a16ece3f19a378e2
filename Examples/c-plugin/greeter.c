/*
 * greeter.c — the routes of Examples/swift-plugin and Examples/rust-plugin in
 * C, answering the same requests with the same records
 * (Tests/EndToEndTests/PluginParityTests.swift):
 *
 *   greeter://x-callback-url/greet?name=Ada&greeting=hi  ->  success?greeting=Hi%2C%20Ada%21
 *   greeter://people/:name                                ->  the same, the name from the path
 *   greeter://x-callback-url/whoami                       ->  success?route=…&numbered=yes&attempt=1
 *
 * C has no kit: a typed parameter is read, checked and converted here. One
 * that is missing or does not convert is answered ParameterError in the
 * words the Swift kit and the Rust binding use, in the plug-in's own domain:
 *
 *   greeter://x-callback-url/greet              ->  missing required parameter 'name'
 *   greeter://x-callback-url/greet?name=Ada&greeting=yo
 *       ->  parameter 'greeting' must be one of hello, hi, welcome, got 'yo'
 *
 * Build (see README.md):
 *   cc -std=c11 -Wall -Wextra -shared -fPIC -I"$(xcallback sdk --include-dir)" greeter.c -o greeter.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcallback.h"

/* Stamped with ABI 1.2, which a 1.0 or 1.1 host refuses to load: so
 * request_route, request_id and request_attempt (1.2) are always there. */
XCALLBACK_PLUGIN("greeter", "1.0.0", "Greets people: greeter://x-callback-url/greet?name=")

/* Kept from registration; only read afterwards, from any thread. */
static const xcallback_host_api *host;

/* What greeting= may ask for, and the word each says; "expected" completes
 * "must be …" in the ParameterError for anything else. */
static const struct {
    const char *value;
    const char *word;
} greetings[] = { { "hello", "Hello" }, { "hi", "Hi" }, { "welcome", "Welcome" } };
static const char greetings_expected[] = "one of hello, hi, welcome";

/*
 * Answers ParameterError for parameter `name`: missing when `value` is NULL,
 * else not `expected` (a phrase: "an integer", "one of …"). The kits' words,
 * so a caller sees one message whatever language a plug-in is written in:
 *
 *   missing required parameter 'name'
 *   parameter 'greeting' must be one of hello, hi, welcome, got 'yo'
 *
 * A value past 80 characters is cut there, with "…" (values are valid UTF-8:
 * the host answers any other request InvalidURL, so counting the bytes that
 * start a character counts characters).
 */
static void reply_parameter_error(xcallback_reply reply, const char *name, const char *expected,
                                  const char *value)
{
    static const char ellipsis[] = "\xE2\x80\xA6"; /* U+2026 */
    size_t shown = 0;
    size_t characters = 0;
    if (value != NULL) {
        for (; value[shown] != '\0'; shown++) {
            if (((unsigned char)value[shown] & 0xC0) != 0x80 && characters++ == 80)
                break;
        }
    }
    size_t size = strlen(name) + strlen(expected) + shown + sizeof ellipsis + 64;
    char *message = malloc(size);
    if (message == NULL) {
        host->reply_error(reply, "OutOfMemory", "cannot allocate the message", NULL);
        return;
    }
    if (value == NULL)
        snprintf(message, size, "missing required parameter '%s'", name);
    else
        snprintf(message, size, "parameter '%s' must be %s, got '%.*s%s'", name, expected, (int)shown,
                 value, value[shown] != '\0' ? ellipsis : "");
    /* NULL domain: the plug-in's own, "greeter", as for every error that names no other. */
    host->reply_error(reply, "ParameterError", message, NULL);
    free(message);
}

/* Completes `reply` with greeting=WORD, NAME! — or EmptyName. */
static void greet(xcallback_reply reply, const char *name, const char *word)
{
    if (*name == '\0') {
        /* An error of the plug-in's own: a code callers can test, a message for people. */
        host->reply_error(reply, "EmptyName", "the name is empty", NULL);
        return;
    }
    size_t size = strlen(word) + strlen(name) + sizeof ", !";
    char *greeting = malloc(size);
    if (greeting == NULL) {
        host->reply_error(reply, "OutOfMemory", "cannot allocate the greeting", NULL);
        return;
    }
    snprintf(greeting, size, "%s, %s!", word, name);
    const xcallback_param output[] = { { "greeting", greeting } };
    host->reply_success(reply, output, 1); /* copies what it needs */
    free(greeting);
}

/* greeter://x-callback-url/greet?name=NAME&greeting=hi: `name` required,
 * `greeting` optional (hello when absent), checked in that order. */
static void greet_action(const xcallback_request *request, xcallback_reply reply, void *user_data)
{
    (void)user_data;
    const char *name = host->request_parameter(request, "name", NULL);
    if (name == NULL) {
        reply_parameter_error(reply, "name", "a string", NULL);
        return;
    }
    const char *word = "Hello";
    const char *asked = host->request_parameter(request, "greeting", NULL);
    if (asked != NULL) {
        word = NULL;
        for (size_t i = 0; i < sizeof greetings / sizeof greetings[0]; i++) {
            if (strcmp(asked, greetings[i].value) == 0)
                word = greetings[i].word;
        }
        if (word == NULL) {
            reply_parameter_error(reply, "greeting", greetings_expected, asked);
            return;
        }
    }
    greet(reply, name, word);
}

/* greeter://people/:name: the name from the path, not the query. */
static void greet_person(const xcallback_request *request, xcallback_reply reply, void *user_data)
{
    (void)user_data;
    const char *name = host->request_argument(request, "name");
    if (name == NULL) {
        reply_parameter_error(reply, "name", "a string", NULL);
        return;
    }
    greet(reply, name, "Hello");
}

/* What a handler can learn about its request: the route that matched, the
 * host's number for it (the one its log lines carry) and which attempt at it
 * this is (1 unless a queue hands it out again). */
static void whoami(const xcallback_request *request, xcallback_reply reply, void *user_data)
{
    (void)user_data;
    char attempt[16];
    snprintf(attempt, sizeof attempt, "%lu", (unsigned long)host->request_attempt(request));
    const xcallback_param output[] = {
        { "route", host->request_route(request) },
        { "numbered", host->request_id(request) > 0 ? "yes" : "no" },
        { "attempt", attempt },
    };
    host->reply_success(reply, output, 3);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
{
    host = api;
    int rc = api->register_action(plugin, "greeter", "greet", greet_action, NULL);
    if (rc == XCALLBACK_OK)
        rc = api->register_pattern(plugin, "greeter://people/:name", greet_person, NULL);
    if (rc == XCALLBACK_OK)
        rc = api->register_action(plugin, "greeter", "whoami", whoami, NULL);
    return rc;
}
