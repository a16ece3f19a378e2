/*
 * xcallback.h — the plug-in ABI of xcallback, version 1.2.
 *
 * This header is the whole contract between the xcallback host and a plug-in.
 * A plug-in is a shared library that exports two C functions:
 *
 *   const xcallback_descriptor *xcallback_plugin_descriptor(void);
 *   int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin);
 *
 * and optionally
 *
 *   void xcallback_plugin_shutdown(xcallback_plugin *plugin);
 *
 * The host calls the descriptor function first and checks it before it calls
 * anything else (PostgreSQL's magic block). The host then hands the plug-in a
 * table of function pointers (SQLite's loadable extensions), so a plug-in
 * never links against host symbols and builds with a plain
 *
 *   cc -shared -fPIC -I"$(xcallback sdk --include-dir)" my_plugin.c -o my_plugin.so
 *
 * Versioning
 * ----------
 * XCALLBACK_ABI_MAJOR changes only when an existing type or function changes
 * meaning or layout; the host refuses a plug-in whose major differs.
 * XCALLBACK_ABI_MINOR grows when functions are appended to the end of
 * xcallback_host_api; nothing is ever removed or reordered within a major.
 * The host loads plug-ins built against its own minor or any older one and
 * refuses a plug-in built against a newer minor than its own. A plug-in that
 * wants a function added in minor N checks `api->abi_minor >= N` first.
 *
 *   1.0  registration, request accessors, completion, log
 *   1.1  register_function: typed function actions called through libffi
 *   1.2  request_route, request_argument_count/_name/_value, request_id,
 *        request_attempt
 *
 * A plug-in built against an older minor loads into a newer host unchanged.
 * XCALLBACK_PLUGIN stamps the descriptor with the header's minor (1.2 here),
 * which an older host refuses; a plug-in that must also load into 1.0 hosts
 * fills its descriptor with abi_minor 0 by hand and checks `api->abi_minor`
 * before calling any function of a later minor.
 *
 * Threads and lifetimes
 * ---------------------
 * Handlers are called on host threads, possibly several at once. A handler
 * may complete its request before it returns or later, from any thread.
 * Every request is completed exactly once; the host ignores (and logs) any
 * further completion, so a stray second completion is harmless.
 */
#ifndef XCALLBACK_H
#define XCALLBACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Version and symbol names                                                  */
/* ------------------------------------------------------------------------ */

/** 'X' 'C' 'B' '1': the first field of every descriptor. */
#define XCALLBACK_ABI_MAGIC 0x58434231u
#define XCALLBACK_ABI_MAJOR 1
#define XCALLBACK_ABI_MINOR 2

#define XCALLBACK_DESCRIPTOR_SYMBOL "xcallback_plugin_descriptor"
#define XCALLBACK_REGISTER_SYMBOL "xcallback_plugin_register"
#define XCALLBACK_SHUTDOWN_SYMBOL "xcallback_plugin_shutdown"

#if defined(__GNUC__) || defined(__clang__)
#define XCALLBACK_EXPORT __attribute__((visibility("default")))
#else
#define XCALLBACK_EXPORT
#endif

/* ------------------------------------------------------------------------ */
/* The descriptor                                                            */
/* ------------------------------------------------------------------------ */

/**
 * Identifies a plug-in and the ABI it was built against. Fixed-width fields
 * first, pointers last: no padding on any common 32- or 64-bit ABI, so host
 * and plug-in agree on the layout whatever compiler built them.
 */
typedef struct xcallback_descriptor {
    uint32_t magic;           /* XCALLBACK_ABI_MAGIC */
    uint16_t abi_major;       /* XCALLBACK_ABI_MAJOR at build time */
    uint16_t abi_minor;       /* XCALLBACK_ABI_MINOR at build time */
    uint32_t descriptor_size; /* sizeof(xcallback_descriptor) at build time */
    uint32_t host_api_size;   /* since 1.2: sizeof(xcallback_host_api) at build time, so
                               * the host can refuse a plug-in built against a table
                               * of another layout (0: not stated; before 1.2 this
                               * field was `flags`, reserved, zero) */
    const char *name;         /* 1-64 characters of [A-Za-z0-9._-]; unique among loaded plug-ins */
    const char *version;      /* free text, e.g. "1.2.0"; may be NULL */
    const char *description;  /* one line; may be NULL */
} xcallback_descriptor;

/** Fills a descriptor for the ABI this header describes. */
#define XCALLBACK_DESCRIPTOR_INIT(name, version, description)                  \
    { XCALLBACK_ABI_MAGIC, XCALLBACK_ABI_MAJOR, XCALLBACK_ABI_MINOR,           \
      (uint32_t)sizeof(xcallback_descriptor), (uint32_t)sizeof(xcallback_host_api), \
      (name), (version), (description) }

/**
 * Defines xcallback_plugin_descriptor() for a C plug-in in one line:
 *     XCALLBACK_PLUGIN("alert", "1.0.0", "Shows alerts")
 *  (no semicolon after it: it expands to a function definition). */
#define XCALLBACK_PLUGIN(name, version, description)                           \
    XCALLBACK_EXPORT const xcallback_descriptor *xcallback_plugin_descriptor(void) { \
        static const xcallback_descriptor descriptor =                         \
            XCALLBACK_DESCRIPTOR_INIT(name, version, description);             \
        return &descriptor;                                                    \
    }

/* ------------------------------------------------------------------------ */
/* Handles and values                                                        */
/* ------------------------------------------------------------------------ */

/** The host's handle for one loaded plug-in. Owned by the host; valid from
 *  xcallback_plugin_register until xcallback_plugin_shutdown returns. */
typedef struct xcallback_plugin xcallback_plugin;

/** One request. Owned by the host; valid from the handler call until the
 *  request is completed (success, error, cancel or decline), never after. */
typedef struct xcallback_request xcallback_request;

/** The completion token of one handler call. A plain value: copy it freely,
 *  to any thread. Completing it a second time is ignored and logged. */
typedef struct xcallback_reply {
    uint64_t token;
} xcallback_reply;

/** One output parameter. The host copies name and value before the
 *  completion function returns; the caller keeps ownership of both. */
typedef struct xcallback_param {
    const char *name;
    const char *value;
} xcallback_param;

/**
 * A handler. `user_data` is the pointer given at registration, passed back
 * untouched; the plug-in owns it. The handler completes `reply` exactly once,
 * before or after it returns, from any thread.
 */
typedef void (*xcallback_handler)(const xcallback_request *request,
                                  xcallback_reply reply,
                                  void *user_data);

/** Status codes returned by host functions. */
enum {
    XCALLBACK_OK = 0,
    XCALLBACK_ERR_INVALID_ARGUMENT = -1,  /* NULL or malformed argument */
    XCALLBACK_ERR_BAD_PATTERN = -2,       /* route pattern does not parse */
    XCALLBACK_ERR_ROUTE_CONFLICT = -3,    /* another plug-in owns this route */
    XCALLBACK_ERR_NOT_REGISTERING = -4,   /* registration outside xcallback_plugin_register */
    XCALLBACK_ERR_ALREADY_COMPLETED = -5, /* reply completed before, or unknown token */
    XCALLBACK_ERR_BAD_DECLARATION = -6    /* (1.1) register_function: the C declaration does not
                                             parse or uses an unsupported type; the host logs
                                             the line, column and reason */
};

/** Log levels for xcallback_host_api.log. */
enum {
    XCALLBACK_LOG_DEBUG = 0,
    XCALLBACK_LOG_INFO = 1,
    XCALLBACK_LOG_WARNING = 2,
    XCALLBACK_LOG_ERROR = 3
};

/* ------------------------------------------------------------------------ */
/* The host API table                                                        */
/* ------------------------------------------------------------------------ */

/**
 * Functions the host offers. Owned by the host and valid until
 * xcallback_plugin_shutdown returns; keep the pointer, never copy the table.
 * Every `const char *` argument is borrowed: the host copies what it keeps.
 * Every `const char *` the host returns is owned by the host and lives as
 * long as the object it was read from.
 */
typedef struct xcallback_host_api {
    uint32_t api_size;  /* sizeof(xcallback_host_api) in the host: grows with the minor */
    uint16_t abi_major; /* the host's XCALLBACK_ABI_MAJOR */
    uint16_t abi_minor; /* the host's XCALLBACK_ABI_MINOR */

    /* --- ABI 1.0: registration, only during xcallback_plugin_register ---- */

    /** Registers `scheme://x-callback-url/action`. */
    int (*register_action)(xcallback_plugin *plugin, const char *scheme,
                           const char *action, xcallback_handler handler,
                           void *user_data);

    /** Registers `scheme://controller/action` (host = controller). */
    int (*register_controller_action)(xcallback_plugin *plugin, const char *scheme,
                                      const char *controller, const char *action,
                                      xcallback_handler handler, void *user_data);

    /** Registers a pattern route such as `pokedex://pokemons(/:pokedexID)`:
     *  literal segments, `:name` arguments, optional groups, a trailing `*`. */
    int (*register_pattern)(xcallback_plugin *plugin, const char *pattern,
                            xcallback_handler handler, void *user_data);

    /* --- ABI 1.0: request accessors, callable from any thread ------------ */

    /** The request line as received. */
    const char *(*request_url)(const xcallback_request *request);
    /** The scheme, lowercased. */
    const char *(*request_scheme)(const xcallback_request *request);
    /** The `x-source` parameter, or NULL. */
    const char *(*request_source)(const xcallback_request *request);
    /** The value of route argument `name` (`:name`, or `*` for the wildcard
     *  remainder), or NULL. */
    const char *(*request_argument)(const xcallback_request *request, const char *name);
    /** Number of action parameters (x-callback parameters excluded). */
    size_t (*request_parameter_count)(const xcallback_request *request);
    /** Name of parameter `index`, or NULL past the end. */
    const char *(*request_parameter_name)(const xcallback_request *request, size_t index);
    /** Decoded value of parameter `index`, or NULL past the end. A value
     *  never holds a NUL byte (the host answers a line with `%00` InvalidURL),
     *  so it is a plain C string; `length`, when not NULL, receives its size
     *  in bytes, and `value[length]` is the terminating NUL. */
    const char *(*request_parameter_value)(const xcallback_request *request, size_t index,
                                           size_t *length);
    /** First value of parameter `name`, or NULL when absent. */
    const char *(*request_parameter)(const xcallback_request *request, const char *name,
                                     size_t *length);

    /* --- ABI 1.0: completion, exactly once per reply, from any thread ---- */

    /** Success with `count` output parameters (`params` may be NULL when 0). */
    int (*reply_success)(xcallback_reply reply, const xcallback_param *params, size_t count);
    /** Error. `code` is required; `message` may be NULL; a NULL `domain`
     *  means the plug-in's name. */
    int (*reply_error)(xcallback_reply reply, const char *code, const char *message,
                       const char *domain);
    /** Cancel: the user or the plug-in gave up; the x-cancel callback fires. */
    int (*reply_cancel)(xcallback_reply reply);
    /** Decline: this request is not for this handler after all. The host
     *  tries the next matching route; when none is left, NotFoundAction. */
    int (*reply_decline)(xcallback_reply reply);

    /* --- ABI 1.0: diagnostics -------------------------------------------- */

    /** Writes one line to the host's log (stderr), tagged with the plug-in.
     *  Callable from any thread, at any time while the plug-in is loaded. */
    void (*log)(xcallback_plugin *plugin, int level, const char *message);

    /* --- ABI 1.1: typed function actions, only during xcallback_plugin_register --- */

    /**
     * Since ABI 1.1: present only when `api->abi_minor >= 1`; check that
     * first (a 1.0 host's table ends before this field).
     *
     * Registers a plain C function as the handler of route `pattern` (a
     * pattern as for register_pattern, e.g. "calc://x-callback-url/add").
     * `declaration` is the function's C signature with named parameters:
     *
     *     double add(double lhs, double rhs)
     *
     * The names are the URL parameter names (a route argument `:name` of the
     * same name is used first). For each request the host converts those
     * values to the declared C types, calls `function` through libffi, and
     * answers success with the return value as `result_name` (NULL means
     * "result"; a void function answers success with no parameter). A value
     * that is missing or does not convert (an integer outside the declared
     * width included) is a ParameterError in domain "xcallback", and the
     * function is not called. The plug-in writes no URL or reply code.
     *
     * Types: int8_t ... int64_t, uint8_t ... uint64_t, char, signed char,
     * unsigned char, short, int, long, long long and their unsigned forms,
     * size_t, ssize_t, intptr_t, uintptr_t, ptrdiff_t, float, double,
     * bool/_Bool (accepts true/false, 1/0, yes/no), const char * (a
     * NUL-terminated copy, valid during the call only; as a return value,
     * copied, never freed; NULL gives no result parameter), and void as a
     * return type or as (void). Other pointers, structs, unions, enums,
     * arrays, function pointers, long double and variadic functions are
     * refused. The function must have exactly the declared signature: the
     * host cannot check it. It runs on host threads, possibly several at once.
     *
     * Returns XCALLBACK_OK, XCALLBACK_ERR_INVALID_ARGUMENT (a NULL argument,
     * or an empty result_name), XCALLBACK_ERR_BAD_DECLARATION,
     * XCALLBACK_ERR_BAD_PATTERN, XCALLBACK_ERR_ROUTE_CONFLICT or
     * XCALLBACK_ERR_NOT_REGISTERING.
     */
    int (*register_function)(xcallback_plugin *plugin, const char *pattern,
                             const char *declaration, void (*function)(void),
                             const char *result_name /* NULL = "result" */);

    /* --- ABI 1.2: what a handler can learn about its request, any thread --- */

    /* Since ABI 1.2: present only when `api->abi_minor >= 2`. */

    /** The pattern of the route that matched, as the plug-in registered it
     *  (e.g. "pokedex://pokemons(/:pokedexID)"): one handler may serve several. */
    const char *(*request_route)(const xcallback_request *request);
    /** Number of route arguments: the `:name` arguments the request bound, in
     *  pattern order, then `*` for a wildcard. */
    size_t (*request_argument_count)(const xcallback_request *request);
    /** Name of argument `index` (without the `:`; `"*"` for the wildcard), or
     *  NULL past the end. */
    const char *(*request_argument_name)(const xcallback_request *request, size_t index);
    /** Value of argument `index`, or NULL past the end. */
    const char *(*request_argument_value)(const xcallback_request *request, size_t index);
    /** The host's number for this request, never 0, and the number its log
     *  lines about the request carry: unique within one run of the host for a
     *  request read from a stream; from a durable queue (`run --queue`), the
     *  queue's request id, the same on every attempt and every host. A
     *  plug-in that must not act twice on one request may key on it. */
    uint64_t (*request_id)(const xcallback_request *request);
    /** The attempt this is at running the request: 1 for a request read from a stream
     *  (stdin, FIFO, socket); from a durable queue (`xcallback run --queue`), 1 the first
     *  time a host claims it and one more each time another claim follows a host that
     *  stopped before recording an outcome. With request_id (which, from a queue, is the
     *  queue's request id, the same on every attempt and every host) a plug-in that must
     *  not act twice can de-duplicate. */
    uint32_t (*request_attempt)(const xcallback_request *request);

    /* Functions added in later minors are appended here, never above. */
} xcallback_host_api;

/* ------------------------------------------------------------------------ */
/* What a plug-in exports                                                    */
/* ------------------------------------------------------------------------ */

/** The types of the three entry points, for hosts that look them up. */
typedef const xcallback_descriptor *(*xcallback_descriptor_function)(void);
typedef int (*xcallback_register_function)(const xcallback_host_api *api,
                                           xcallback_plugin *plugin);
typedef void (*xcallback_shutdown_function)(xcallback_plugin *plugin);

/* Swift plug-ins export these with @_cdecl; declaring them to Swift too would
 * clash with those definitions, so the prototypes are for C and C++ only. */
#if !defined(__swift__)

/** Required. Returns a descriptor with static storage duration. Called first,
 *  possibly in a scanner process that never registers the plug-in. */
XCALLBACK_EXPORT const xcallback_descriptor *xcallback_plugin_descriptor(void);

/** Required. Registers the plug-in's routes through `api`. Returns
 *  XCALLBACK_OK, or any other value to refuse loading (the host then drops
 *  every route this plug-in registered). */
XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api,
                                               xcallback_plugin *plugin);

/** Optional. Called once when the host (or the plug-in's worker process)
 *  stops gracefully; the host starts no handler after it is called, though a
 *  handler that never returned may still be running. Replies completed after
 *  it returns are ignored. */
XCALLBACK_EXPORT void xcallback_plugin_shutdown(xcallback_plugin *plugin);

#endif /* !__swift__ */

#ifdef __cplusplus
}
#endif

#endif /* XCALLBACK_H */
