//! A fake host for the unit tests: an API table over an in-memory request,
//! which records what was registered and how each request was completed.

use crate::{sys, Reply};
use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::null;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A request as the fake host holds it.
pub struct FakeRequest {
    pub url: CString,
    pub parameters: Vec<(CString, CString)>,
    pub arguments: Vec<(CString, CString)>,
    pub route: CString,
    pub id: u64,
    pub attempt: u32,
}

impl FakeRequest {
    pub fn new(url: &str, parameters: &[(&str, &str)], arguments: &[(&str, &str)]) -> Self {
        let pairs = |pairs: &[(&str, &str)]| {
            pairs.iter().map(|(name, value)| (CString::new(*name).unwrap(), CString::new(*value).unwrap())).collect()
        };
        FakeRequest {
            url: CString::new(url).unwrap(),
            parameters: pairs(parameters),
            arguments: pairs(arguments),
            route: CString::new("fake://route").unwrap(),
            id: 42,
            attempt: 2,
        }
    }
}

thread_local! {
    static REGISTERED: RefCell<Vec<(String, sys::Handler, *mut c_void)>> = const { RefCell::new(Vec::new()) };
}

/// Completions by reply token, from any thread.
static REPLIES: Mutex<Vec<(u64, Reply)>> = Mutex::new(Vec::new());
static TOKENS: AtomicU64 = AtomicU64::new(1);

unsafe fn fake<'a>(request: *const sys::Request) -> &'a FakeRequest {
    &*(request as *const FakeRequest)
}

unsafe fn string(pointer: *const c_char) -> String {
    CStr::from_ptr(pointer).to_string_lossy().into_owned()
}

fn find(pairs: &[(CString, CString)], name: *const c_char) -> *const c_char {
    let name = unsafe { CStr::from_ptr(name) };
    pairs.iter().find(|(key, _)| key.as_c_str() == name).map_or(null(), |(_, value)| value.as_ptr())
}

fn record(token: sys::Reply, reply: Reply) -> c_int {
    REPLIES.lock().unwrap().push((token.token, reply));
    sys::OK
}

unsafe extern "C" fn register_action(
    _: *mut sys::Plugin,
    scheme: *const c_char,
    action: *const c_char,
    handler: sys::Handler,
    data: *mut c_void,
) -> c_int {
    let route = format!("{}://x-callback-url/{}", string(scheme), string(action));
    REGISTERED.with(|routes| routes.borrow_mut().push((route, handler, data)));
    sys::OK
}

unsafe extern "C" fn register_controller_action(
    _: *mut sys::Plugin,
    scheme: *const c_char,
    controller: *const c_char,
    action: *const c_char,
    handler: sys::Handler,
    data: *mut c_void,
) -> c_int {
    let route = format!("{}://{}/{}", string(scheme), string(controller), string(action));
    REGISTERED.with(|routes| routes.borrow_mut().push((route, handler, data)));
    sys::OK
}

unsafe extern "C" fn register_pattern(
    _: *mut sys::Plugin,
    pattern: *const c_char,
    handler: sys::Handler,
    data: *mut c_void,
) -> c_int {
    if string(pattern).contains("::") {
        return -2; // XCALLBACK_ERR_BAD_PATTERN
    }
    REGISTERED.with(|routes| routes.borrow_mut().push((string(pattern), handler, data)));
    sys::OK
}

unsafe extern "C" fn request_url(request: *const sys::Request) -> *const c_char {
    fake(request).url.as_ptr()
}
unsafe extern "C" fn request_scheme(_: *const sys::Request) -> *const c_char {
    c"fake".as_ptr()
}
unsafe extern "C" fn request_source(_: *const sys::Request) -> *const c_char {
    null()
}
unsafe extern "C" fn request_argument(request: *const sys::Request, name: *const c_char) -> *const c_char {
    find(&fake(request).arguments, name)
}
unsafe extern "C" fn request_parameter_count(request: *const sys::Request) -> usize {
    fake(request).parameters.len()
}
unsafe extern "C" fn request_parameter_name(request: *const sys::Request, index: usize) -> *const c_char {
    fake(request).parameters.get(index).map_or(null(), |(name, _)| name.as_ptr())
}
unsafe extern "C" fn request_parameter_value(
    request: *const sys::Request,
    index: usize,
    _: *mut usize,
) -> *const c_char {
    fake(request).parameters.get(index).map_or(null(), |(_, value)| value.as_ptr())
}
unsafe extern "C" fn request_parameter(
    request: *const sys::Request,
    name: *const c_char,
    _: *mut usize,
) -> *const c_char {
    find(&fake(request).parameters, name)
}
unsafe extern "C" fn reply_success(token: sys::Reply, items: *const sys::Param, count: usize) -> c_int {
    let items = std::slice::from_raw_parts(items, count);
    record(token, Reply::Success(items.iter().map(|item| (string(item.name), string(item.value))).collect()))
}
unsafe extern "C" fn reply_error(
    token: sys::Reply,
    code: *const c_char,
    message: *const c_char,
    domain: *const c_char,
) -> c_int {
    let domain = (!domain.is_null()).then(|| string(domain));
    record(token, Reply::Error { code: string(code), message: string(message), domain })
}
unsafe extern "C" fn reply_cancel(token: sys::Reply) -> c_int {
    record(token, Reply::Cancel)
}
unsafe extern "C" fn reply_decline(token: sys::Reply) -> c_int {
    record(token, Reply::Decline)
}
unsafe extern "C" fn log(_: *mut sys::Plugin, _: c_int, _: *const c_char) {}
unsafe extern "C" fn request_route(request: *const sys::Request) -> *const c_char {
    fake(request).route.as_ptr()
}
unsafe extern "C" fn request_argument_count(request: *const sys::Request) -> usize {
    fake(request).arguments.len()
}
unsafe extern "C" fn request_argument_name(request: *const sys::Request, index: usize) -> *const c_char {
    fake(request).arguments.get(index).map_or(null(), |(name, _)| name.as_ptr())
}
unsafe extern "C" fn request_argument_value(request: *const sys::Request, index: usize) -> *const c_char {
    fake(request).arguments.get(index).map_or(null(), |(_, value)| value.as_ptr())
}
unsafe extern "C" fn request_id(request: *const sys::Request) -> u64 {
    fake(request).id
}
unsafe extern "C" fn request_attempt(request: *const sys::Request) -> u32 {
    fake(request).attempt
}

/// The fake host's table, for ABI `minor` (an older one lacks 1.2's accessors).
pub fn api(minor: u16) -> &'static sys::HostApi {
    let size = if minor >= 2 {
        std::mem::size_of::<sys::HostApi>()
    } else {
        std::mem::offset_of!(sys::HostApi, request_route)
    };
    Box::leak(Box::new(sys::HostApi {
        api_size: size as u32,
        abi_major: 1,
        abi_minor: minor,
        register_action,
        register_controller_action,
        register_pattern,
        request_url,
        request_scheme,
        request_source,
        request_argument,
        request_parameter_count,
        request_parameter_name,
        request_parameter_value,
        request_parameter,
        reply_success,
        reply_error,
        reply_cancel,
        reply_decline,
        log,
        register_function: null(),
        request_route,
        request_argument_count,
        request_argument_name,
        request_argument_value,
        request_id,
        request_attempt,
    }))
}

/// Registers through `build` on the fake host; returns the status and the
/// routes registered on this thread so far.
pub fn register(api: &'static sys::HostApi, build: impl FnOnce(&mut crate::Routes)) -> (c_int, Vec<String>) {
    let status = unsafe { crate::register(api, std::ptr::null_mut(), build) };
    (status, REGISTERED.with(|routes| routes.borrow().iter().map(|(route, _, _)| route.clone()).collect()))
}

/// Runs the handler registered for `route` on `request`; returns its reply
/// (waiting up to 5 s for one sent from another thread).
pub fn call(route: &str, request: &FakeRequest) -> Reply {
    let mut replies = call_all(route, request, Duration::ZERO);
    assert_eq!(replies.len(), 1, "{route}: completed {} times: {replies:?}", replies.len());
    replies.remove(0)
}

/// Runs the handler; waits for its first completion, then `settle` longer;
/// returns every completion of that request.
pub fn call_all(route: &str, request: &FakeRequest, settle: Duration) -> Vec<Reply> {
    let (handler, data) = REGISTERED
        .with(|routes| {
            routes.borrow().iter().find(|(name, _, _)| name == route).map(|(_, handler, data)| (*handler, *data))
        })
        .unwrap_or_else(|| panic!("no route {route}"));
    let token = TOKENS.fetch_add(1, Ordering::Relaxed);
    unsafe { handler(request as *const FakeRequest as *const sys::Request, sys::Reply { token }, data) };
    let deadline = Instant::now() + Duration::from_secs(5);
    let replies = || -> Vec<Reply> {
        REPLIES.lock().unwrap().iter().filter(|(of, _)| *of == token).map(|(_, reply)| reply.clone()).collect()
    };
    while replies().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(settle);
    replies()
}

/// Whether any request was completed with a success holding `value`.
pub fn answered_with(value: &str) -> bool {
    REPLIES
        .lock()
        .unwrap()
        .iter()
        .any(|(_, reply)| matches!(reply, Reply::Success(items) if items.iter().any(|(_, v)| v == value)))
}
