//! The C ABI of `xcallback.h` (ABI 1.2), written by hand, field for field.
//! The size asserts below fail the build if a field goes missing; the test
//! `layout_is_the_headers`, given `xcallback sdk --layout` (the Swift test
//! suite passes it), holds every offset and size to the header's.

use std::os::raw::{c_char, c_int, c_void};

pub const ABI_MAGIC: u32 = 0x5843_4231;
pub const ABI_MAJOR: u16 = 1;
pub const ABI_MINOR: u16 = 2;

pub const OK: c_int = 0;
pub const LOG_DEBUG: c_int = 0;
pub const LOG_INFO: c_int = 1;
pub const LOG_WARNING: c_int = 2;
pub const LOG_ERROR: c_int = 3;

/// `xcallback_descriptor`.
#[repr(C)]
pub struct Descriptor {
    pub magic: u32,
    pub abi_major: u16,
    pub abi_minor: u16,
    pub descriptor_size: u32,
    pub host_api_size: u32,
    pub name: *const c_char,
    pub version: *const c_char,
    pub description: *const c_char,
}

impl Descriptor {
    /// A descriptor for this ABI; the strings must be NUL-terminated and static.
    pub const fn new(name: *const c_char, version: *const c_char, description: *const c_char) -> Self {
        Descriptor {
            magic: ABI_MAGIC,
            abi_major: ABI_MAJOR,
            abi_minor: ABI_MINOR,
            descriptor_size: std::mem::size_of::<Descriptor>() as u32,
            host_api_size: std::mem::size_of::<HostApi>() as u32,
            name,
            version,
            description,
        }
    }
}

/// A descriptor in a `static`: its pointers are to static strings.
pub struct StaticDescriptor(pub Descriptor);
unsafe impl Sync for StaticDescriptor {}

/// `xcallback_request`: opaque.
#[repr(C)]
pub struct Request {
    _private: [u8; 0],
}

/// `xcallback_plugin`: opaque.
#[repr(C)]
pub struct Plugin {
    _private: [u8; 0],
}

/// `xcallback_reply`: a token, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Reply {
    pub token: u64,
}

/// `xcallback_param`.
#[repr(C)]
pub struct Param {
    pub name: *const c_char,
    pub value: *const c_char,
}

/// `xcallback_handler`.
pub type Handler = unsafe extern "C" fn(request: *const Request, reply: Reply, user_data: *mut c_void);

/// `xcallback_host_api`: the table the host hands the plug-in.
#[repr(C)]
pub struct HostApi {
    pub api_size: u32,
    pub abi_major: u16,
    pub abi_minor: u16,
    // 1.0: registration
    pub register_action: unsafe extern "C" fn(*mut Plugin, *const c_char, *const c_char, Handler, *mut c_void) -> c_int,
    pub register_controller_action:
        unsafe extern "C" fn(*mut Plugin, *const c_char, *const c_char, *const c_char, Handler, *mut c_void) -> c_int,
    pub register_pattern: unsafe extern "C" fn(*mut Plugin, *const c_char, Handler, *mut c_void) -> c_int,
    // 1.0: request accessors
    pub request_url: unsafe extern "C" fn(*const Request) -> *const c_char,
    pub request_scheme: unsafe extern "C" fn(*const Request) -> *const c_char,
    pub request_source: unsafe extern "C" fn(*const Request) -> *const c_char,
    pub request_argument: unsafe extern "C" fn(*const Request, *const c_char) -> *const c_char,
    pub request_parameter_count: unsafe extern "C" fn(*const Request) -> usize,
    pub request_parameter_name: unsafe extern "C" fn(*const Request, usize) -> *const c_char,
    pub request_parameter_value: unsafe extern "C" fn(*const Request, usize, *mut usize) -> *const c_char,
    pub request_parameter: unsafe extern "C" fn(*const Request, *const c_char, *mut usize) -> *const c_char,
    // 1.0: completion
    pub reply_success: unsafe extern "C" fn(Reply, *const Param, usize) -> c_int,
    pub reply_error: unsafe extern "C" fn(Reply, *const c_char, *const c_char, *const c_char) -> c_int,
    pub reply_cancel: unsafe extern "C" fn(Reply) -> c_int,
    pub reply_decline: unsafe extern "C" fn(Reply) -> c_int,
    // 1.0: diagnostics
    pub log: unsafe extern "C" fn(*mut Plugin, c_int, *const c_char),
    // 1.1: typed function actions (not wrapped by the safe layer)
    pub register_function: *const c_void,
    // 1.2: what a handler can learn about its request
    pub request_route: unsafe extern "C" fn(*const Request) -> *const c_char,
    pub request_argument_count: unsafe extern "C" fn(*const Request) -> usize,
    pub request_argument_name: unsafe extern "C" fn(*const Request, usize) -> *const c_char,
    pub request_argument_value: unsafe extern "C" fn(*const Request, usize) -> *const c_char,
    pub request_id: unsafe extern "C" fn(*const Request) -> u64,
    pub request_attempt: unsafe extern "C" fn(*const Request) -> u32,
}

const POINTER: usize = std::mem::size_of::<usize>();
const _: () = assert!(std::mem::size_of::<Descriptor>() == 16 + 3 * POINTER);
const _: () = assert!(std::mem::size_of::<HostApi>() == 8 + 23 * POINTER);
const _: () = assert!(std::mem::offset_of!(HostApi, request_attempt) == 8 + 22 * POINTER);
const _: () = assert!(std::mem::size_of::<Reply>() == 8);
const _: () = assert!(std::mem::size_of::<Param>() == 2 * POINTER);

/// The size of the field `field` picks, for `layout`.
#[cfg(test)]
fn field_size<T, F>(_field: impl Fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// This file's layout in the words of `xcallback sdk --layout` (without its
/// comment line), so a test can hold the two side by side: field for field,
/// what the size asserts above check only in sum.
#[cfg(test)]
pub(crate) fn layout() -> String {
    use std::mem::{offset_of, size_of};
    let mut lines = vec![
        format!("xcallback_descriptor size {}", size_of::<Descriptor>()),
        format!("xcallback_host_api size {}", size_of::<HostApi>()),
        format!("xcallback_param size {}", size_of::<Param>()),
        format!("xcallback_reply size {}", size_of::<Reply>()),
    ];
    macro_rules! fields {
        ($c:literal, $type:ty, $($field:ident),+) => {$(
            lines.push(format!(
                "{}.{} offset {} size {}",
                $c,
                stringify!($field),
                offset_of!($type, $field),
                field_size(|value: &$type| &value.$field)
            ));
        )+};
    }
    fields!(
        "xcallback_descriptor",
        Descriptor,
        magic,
        abi_major,
        abi_minor,
        descriptor_size,
        host_api_size,
        name,
        version,
        description
    );
    fields!(
        "xcallback_host_api",
        HostApi,
        api_size,
        abi_major,
        abi_minor,
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
        register_function,
        request_route,
        request_argument_count,
        request_argument_name,
        request_argument_value,
        request_id,
        request_attempt
    );
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    /// With `XCALLBACK_LAYOUT` naming a file that holds `xcallback sdk
    /// --layout`'s output (the Swift test suite passes one), the layout here
    /// must be that, line for line; without it there is nothing to hold it to.
    #[test]
    fn layout_is_the_headers() {
        let Ok(path) = std::env::var("XCALLBACK_LAYOUT") else { return };
        let text = std::fs::read_to_string(&path).expect("XCALLBACK_LAYOUT names a readable file");
        let expected: Vec<&str> = text.lines().filter(|line| !line.starts_with('#') && !line.is_empty()).collect();
        assert_eq!(super::layout(), expected.join("\n"));
    }
}
