//! Registering routes, and the one C handler every Rust closure runs behind.

use crate::later::{Pending, Responder, Table};
use crate::reply::{c_string, send, IntoReply, Reply, Result};
use crate::request::Request;
use crate::sys;
use std::any::Any;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

type BoxedHandler = Box<dyn Fn(&Request) -> Reply + Send + Sync>;
type BoxedLater = Box<dyn Fn(&Request, Responder) -> Result<()> + Send + Sync>;

enum Body {
    /// Answers by returning.
    Now(BoxedHandler),
    /// Answers through a `Responder`, now or later, from any thread.
    Later(BoxedLater),
}

/// What a registered route's `user_data` points at: the table (it outlives
/// the plug-in) and the closure. Never freed: the host never unloads.
struct Route {
    api: &'static sys::HostApi,
    body: Body,
}

/// A panic's message, when it has one a person can read.
fn panic_message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// The error `Panic` ("the handler panicked: MESSAGE"), in the plug-in's domain.
fn panicked(payload: &(dyn Any + Send)) -> Reply {
    match panic_message(payload) {
        Some(message) => Reply::error("Panic", &format!("the handler panicked: {message}")),
        None => Reply::error("Panic", "the handler panicked"),
    }
}

/// Runs `handler`; a panic becomes the error `Panic` instead of unwinding
/// into the host, which would abort it.
fn answer<T>(handler: impl FnOnce() -> T) -> std::result::Result<T, Reply> {
    catch_unwind(AssertUnwindSafe(handler)).map_err(|payload| panicked(payload.as_ref()))
}

unsafe extern "C" fn trampoline(request: *const sys::Request, reply: sys::Reply, user_data: *mut c_void) {
    let route = &*(user_data as *const Route);
    let view = Request::new(route.api, request);
    match &route.body {
        Body::Now(handler) => {
            let answer = answer(|| handler(&view)).unwrap_or_else(|panic| panic);
            send(route.api, reply, answer);
        }
        Body::Later(handler) => {
            let pending = Pending::new(Table(route.api), reply);
            let responder = Responder::new(pending.clone());
            let failure = match answer(|| handler(&view, responder)) {
                Ok(Ok(())) => None,
                Ok(Err(error)) => Some(error.into()),
                Err(panic) => Some(panic),
            };
            pending.handler_returned(failure);
        }
    }
}

/// The routes a plug-in registers, inside `plugin!`'s `routes:` block. A
/// handler is a function or closure from `&Request` to a [`Reply`] or to an
/// [`xcallback::Result<Reply>`](crate::Result) (so it may use `?`). It may run
/// on several host threads at once.
pub struct Routes {
    api: &'static sys::HostApi,
    plugin: *mut sys::Plugin,
    status: c_int,
}

fn now<R: IntoReply>(handler: impl Fn(&Request) -> R + Send + Sync + 'static) -> Body {
    Body::Now(Box::new(move |request| handler(request).into_reply()))
}

fn later(handler: impl Fn(&Request, Responder) -> Result<()> + Send + Sync + 'static) -> Body {
    Body::Later(Box::new(handler))
}

impl Routes {
    fn data(&self, body: Body) -> *mut c_void {
        Box::into_raw(Box::new(Route { api: self.api, body })) as *mut c_void
    }

    /// Keeps the first status that was not OK: what registration returns.
    fn keep(&mut self, status: c_int) {
        if self.status == sys::OK {
            self.status = status;
        }
    }

    fn register_action(&mut self, scheme: &str, action: &str, body: Body) {
        let (scheme, action) = (c_string(scheme), c_string(action));
        let data = self.data(body);
        let status =
            unsafe { (self.api.register_action)(self.plugin, scheme.as_ptr(), action.as_ptr(), trampoline, data) };
        self.keep(status);
    }

    fn register_controller(&mut self, scheme: &str, controller: &str, action: &str, body: Body) {
        let (scheme, controller, action) = (c_string(scheme), c_string(controller), c_string(action));
        let data = self.data(body);
        let status = unsafe {
            (self.api.register_controller_action)(
                self.plugin,
                scheme.as_ptr(),
                controller.as_ptr(),
                action.as_ptr(),
                trampoline,
                data,
            )
        };
        self.keep(status);
    }

    fn register_pattern(&mut self, pattern: &str, body: Body) {
        let pattern = c_string(pattern);
        let data = self.data(body);
        let status = unsafe { (self.api.register_pattern)(self.plugin, pattern.as_ptr(), trampoline, data) };
        self.keep(status);
    }

    /// `scheme://x-callback-url/action`.
    pub fn action<R: IntoReply>(
        &mut self,
        scheme: &str,
        action: &str,
        handler: impl Fn(&Request) -> R + Send + Sync + 'static,
    ) {
        self.register_action(scheme, action, now(handler));
    }

    /// `scheme://controller/action` (host = controller).
    pub fn controller<R: IntoReply>(
        &mut self,
        scheme: &str,
        controller: &str,
        action: &str,
        handler: impl Fn(&Request) -> R + Send + Sync + 'static,
    ) {
        self.register_controller(scheme, controller, action, now(handler));
    }

    /// A pattern such as `pokedex://pokemons(/:pokedexID)`: literal segments,
    /// `:name` arguments, optional groups, a trailing `*`.
    pub fn pattern<R: IntoReply>(&mut self, pattern: &str, handler: impl Fn(&Request) -> R + Send + Sync + 'static) {
        self.register_pattern(pattern, now(handler));
    }

    /// `scheme://x-callback-url/action`, answered through a [`Responder`]:
    /// now, or later from any thread. An `Err` the handler returns before
    /// answering (a `ParameterError` from `?`, say) is the answer.
    pub fn action_later(
        &mut self,
        scheme: &str,
        action: &str,
        handler: impl Fn(&Request, Responder) -> Result<()> + Send + Sync + 'static,
    ) {
        self.register_action(scheme, action, later(handler));
    }

    /// `scheme://controller/action`, answered through a [`Responder`].
    pub fn controller_later(
        &mut self,
        scheme: &str,
        controller: &str,
        action: &str,
        handler: impl Fn(&Request, Responder) -> Result<()> + Send + Sync + 'static,
    ) {
        self.register_controller(scheme, controller, action, later(handler));
    }

    /// A pattern, answered through a [`Responder`].
    pub fn pattern_later(
        &mut self,
        pattern: &str,
        handler: impl Fn(&Request, Responder) -> Result<()> + Send + Sync + 'static,
    ) {
        self.register_pattern(pattern, later(handler));
    }

    /// A line in the host's log (`sys::LOG_INFO` …), tagged with the plug-in.
    pub fn log(&self, level: c_int, message: &str) {
        let message = c_string(message);
        unsafe { (self.api.log)(self.plugin, level, message.as_ptr()) }
    }
}

/// `xcallback_plugin_register`'s body, for `plugin!`: runs `build` and
/// returns the first registration status that was not OK (-1 if it panicked).
///
/// # Safety
/// `api` and `plugin` are the host's arguments to `xcallback_plugin_register`.
pub unsafe fn register(api: *const sys::HostApi, plugin: *mut sys::Plugin, build: impl FnOnce(&mut Routes)) -> c_int {
    let Some(api) = api.as_ref() else { return -1 };
    let mut routes = Routes { api, plugin, status: sys::OK };
    if catch_unwind(AssertUnwindSafe(|| build(&mut routes))).is_err() {
        return -1;
    }
    routes.status
}
