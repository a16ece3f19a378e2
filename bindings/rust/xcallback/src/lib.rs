//! Write xcallback plug-ins in Rust.
//!
//! ```ignore
//! use xcallback::{plugin, Reply, Request};
//!
//! fn hello(request: &Request) -> Reply {
//!     match request.parameter("name") {
//!         Some(name) => Reply::success(&[("greeting", &format!("Hello, {name}!"))]),
//!         None => Reply::error("ParameterError", "missing required parameter 'name'"),
//!     }
//! }
//!
//! plugin! {
//!     name: "hello", version: "0.1.0", summary: "Says hello",
//!     routes: |routes| { routes.action("hello", "hello", hello); }
//! }
//! ```
//!
//! Build a `cdylib` (`crate-type = ["cdylib"]`); the library exports the two
//! entry points the host looks up. `sys` is the raw C ABI.

pub mod sys;

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One request, read through the host's accessors. Valid while the handler runs.
pub struct Request<'a> {
    api: &'a sys::HostApi,
    raw: *const sys::Request,
}

fn text(pointer: *const c_char) -> Option<String> {
    if pointer.is_null() {
        None
    } else {
        Some(unsafe { CStr::from_ptr(pointer) }.to_string_lossy().into_owned())
    }
}

impl<'a> Request<'a> {
    /// The request line as received.
    pub fn url(&self) -> String {
        text(unsafe { (self.api.request_url)(self.raw) }).unwrap_or_default()
    }

    /// The scheme, lowercased.
    pub fn scheme(&self) -> String {
        text(unsafe { (self.api.request_scheme)(self.raw) }).unwrap_or_default()
    }

    /// `x-source`: the calling program's name, if it gave one.
    pub fn source(&self) -> Option<String> {
        text(unsafe { (self.api.request_source)(self.raw) })
    }

    /// The first value of parameter `name`, decoded; None when absent.
    pub fn parameter(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        text(unsafe { (self.api.request_parameter)(self.raw, name.as_ptr(), std::ptr::null_mut()) })
    }

    /// Every action parameter, in URL order.
    pub fn parameters(&self) -> Vec<(String, String)> {
        let count = unsafe { (self.api.request_parameter_count)(self.raw) };
        (0..count)
            .filter_map(|index| {
                let name = text(unsafe { (self.api.request_parameter_name)(self.raw, index) })?;
                let value = text(unsafe { (self.api.request_parameter_value)(self.raw, index, std::ptr::null_mut()) })?;
                Some((name, value))
            })
            .collect()
    }

    /// The route argument `:name` (`"*"`: the wildcard's remainder).
    pub fn argument(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        text(unsafe { (self.api.request_argument)(self.raw, name.as_ptr()) })
    }

    /// The pattern of the route that matched (None from a host older than ABI 1.2).
    pub fn route(&self) -> Option<String> {
        if self.api.abi_minor < 2 {
            return None;
        }
        text(unsafe { (self.api.request_route)(self.raw) })
    }

    /// The host's number for this request (0 from a host older than ABI 1.2).
    pub fn id(&self) -> u64 {
        if self.api.abi_minor < 2 {
            return 0;
        }
        unsafe { (self.api.request_id)(self.raw) }
    }

    /// Which attempt at running this request this is: 1, or more when a durable
    /// queue hands out again a request a host stopped before finishing. With `id()`,
    /// what a handler that must not act twice keys on. 1 from a host whose table
    /// has no `request_attempt` (it came late in 1.2: the table's size tells).
    pub fn attempt(&self) -> u32 {
        let end = std::mem::offset_of!(sys::HostApi, request_attempt) + std::mem::size_of::<usize>();
        if (self.api.api_size as usize) < end {
            return 1;
        }
        unsafe { (self.api.request_attempt)(self.raw) }
    }
}

/// A handler's answer.
pub enum Reply {
    Success(Vec<(String, String)>),
    /// `domain` None: the plug-in's name.
    Error { code: String, message: String, domain: Option<String> },
    Cancel,
    /// Not for this handler after all: the host tries the next matching route.
    Decline,
}

impl Reply {
    pub fn success(parameters: &[(&str, &str)]) -> Reply {
        Reply::Success(parameters.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect())
    }

    pub fn error(code: &str, message: &str) -> Reply {
        Reply::Error { code: code.to_string(), message: message.to_string(), domain: None }
    }
}

/// Strings for C: a value holding a NUL byte is cut there (C cannot carry it).
fn c_string(text: &str) -> CString {
    CString::new(text.split('\0').next().unwrap_or("")).unwrap_or_default()
}

fn send(api: &sys::HostApi, reply: sys::Reply, answer: Reply) {
    unsafe {
        match answer {
            Reply::Success(parameters) => {
                let owned: Vec<(CString, CString)> =
                    parameters.iter().map(|(name, value)| (c_string(name), c_string(value))).collect();
                let items: Vec<sys::Param> =
                    owned.iter().map(|(name, value)| sys::Param { name: name.as_ptr(), value: value.as_ptr() }).collect();
                (api.reply_success)(reply, items.as_ptr(), items.len());
            }
            Reply::Error { code, message, domain } => {
                let (code, message) = (c_string(&code), c_string(&message));
                let domain = domain.map(|domain| c_string(&domain));
                let domain_pointer = domain.as_ref().map_or(std::ptr::null(), |domain| domain.as_ptr());
                (api.reply_error)(reply, code.as_ptr(), message.as_ptr(), domain_pointer);
            }
            Reply::Cancel => {
                (api.reply_cancel)(reply);
            }
            Reply::Decline => {
                (api.reply_decline)(reply);
            }
        }
    }
}

type BoxedHandler = Box<dyn Fn(&Request) -> Reply + Send + Sync>;

/// What a registered route's `user_data` points at: the table (it outlives
/// the plug-in) and the closure. Never freed: the host never unloads.
struct Route {
    api: &'static sys::HostApi,
    handler: BoxedHandler,
}

unsafe extern "C" fn trampoline(request: *const sys::Request, reply: sys::Reply, user_data: *mut c_void) {
    let route = &*(user_data as *const Route);
    let view = Request { api: route.api, raw: request };
    // A panic must not unwind into the host: it becomes an error outcome.
    let answer = catch_unwind(AssertUnwindSafe(|| (route.handler)(&view)))
        .unwrap_or_else(|_| Reply::error("Panic", "the handler panicked"));
    send(route.api, reply, answer);
}

/// The routes a plug-in registers, inside `plugin!`'s `routes:` block.
pub struct Routes {
    api: &'static sys::HostApi,
    plugin: *mut sys::Plugin,
    status: c_int,
}

impl Routes {
    fn route(&self, handler: BoxedHandler) -> *mut c_void {
        Box::into_raw(Box::new(Route { api: self.api, handler })) as *mut c_void
    }

    /// `scheme://x-callback-url/action`.
    pub fn action(&mut self, scheme: &str, action: &str, handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) {
        let (scheme, action) = (c_string(scheme), c_string(action));
        let data = self.route(Box::new(handler));
        let status = unsafe { (self.api.register_action)(self.plugin, scheme.as_ptr(), action.as_ptr(), trampoline, data) };
        if self.status == sys::OK {
            self.status = status;
        }
    }

    /// A pattern such as `pokedex://pokemons(/:pokedexID)`.
    pub fn pattern(&mut self, pattern: &str, handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) {
        let pattern = c_string(pattern);
        let data = self.route(Box::new(handler));
        let status = unsafe { (self.api.register_pattern)(self.plugin, pattern.as_ptr(), trampoline, data) };
        if self.status == sys::OK {
            self.status = status;
        }
    }

    /// A line in the host's log.
    pub fn log(&self, level: c_int, message: &str) {
        let message = c_string(message);
        unsafe { (self.api.log)(self.plugin, level, message.as_ptr()) }
    }
}

/// `xcallback_plugin_register`'s body, for `plugin!`: runs `build` and
/// returns the first registration status that was not OK.
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

/// Defines the plug-in's two entry points.
#[macro_export]
macro_rules! plugin {
    (name: $name:literal, version: $version:literal, summary: $summary:literal, routes: |$routes:ident| $body:block) => {
        #[no_mangle]
        pub extern "C" fn xcallback_plugin_descriptor() -> *const $crate::sys::Descriptor {
            static DESCRIPTOR: $crate::sys::StaticDescriptor = $crate::sys::StaticDescriptor($crate::sys::Descriptor::new(
                concat!($name, "\0").as_ptr() as *const ::std::os::raw::c_char,
                concat!($version, "\0").as_ptr() as *const ::std::os::raw::c_char,
                concat!($summary, "\0").as_ptr() as *const ::std::os::raw::c_char,
            ));
            &DESCRIPTOR.0
        }

        /// # Safety
        /// Called by the host with its API table and plug-in handle.
        #[no_mangle]
        pub unsafe extern "C" fn xcallback_plugin_register(
            api: *const $crate::sys::HostApi,
            plugin: *mut $crate::sys::Plugin,
        ) -> ::std::os::raw::c_int {
            $crate::register(api, plugin, |$routes: &mut $crate::Routes| $body)
        }
    };
}
