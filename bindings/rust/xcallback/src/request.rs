//! A request as a handler sees it: read in place through the host's table,
//! for as long as the handler runs.

use crate::sys;
use crate::value::{convert, list_items, FromParameter, ParameterError};
use std::ffi::{CStr, CString};
use std::os::raw::c_char;

/// One request, read through the host's accessors. Valid while the handler
/// runs; copy out what a thread that outlives the handler needs.
pub struct Request<'a> {
    api: &'a sys::HostApi,
    raw: *const sys::Request,
}

fn text(pointer: *const c_char) -> Option<String> {
    if pointer.is_null() {
        None
    } else {
        // The host's values are valid UTF-8 and hold no NUL (it refuses a line that does).
        Some(unsafe { CStr::from_ptr(pointer) }.to_string_lossy().into_owned())
    }
}

impl<'a> Request<'a> {
    pub(crate) fn new(api: &'a sys::HostApi, raw: *const sys::Request) -> Self {
        Request { api, raw }
    }

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

    /// A required parameter converted to `T`: `request.parameter::<f64>("lhs")?`.
    /// Missing or malformed, it is a `ParameterError` (the message names it).
    pub fn parameter<T: FromParameter>(&self, name: &str) -> Result<T, ParameterError> {
        match self.text_parameter(name) {
            Some(text) => convert(name, &text),
            None => Err(ParameterError::missing::<T>(name)),
        }
    }

    /// An optional parameter converted to `T`: None when absent, a
    /// `ParameterError` when present and malformed.
    pub fn optional_parameter<T: FromParameter>(&self, name: &str) -> Result<Option<T>, ParameterError> {
        self.text_parameter(name).map(|text| convert(name, &text)).transpose()
    }

    /// A list parameter, `types=water,grass` or repeated keys or both, in
    /// order (blanks around items and empty items ignored); empty when absent.
    pub fn list<T: FromParameter>(&self, name: &str) -> Result<Vec<T>, ParameterError> {
        let values: Vec<String> =
            self.parameters().into_iter().filter(|(key, _)| key == name).map(|(_, value)| value).collect();
        list_items(values.iter().map(String::as_str)).map(|item| convert(name, item)).collect()
    }

    /// The first value of parameter `name` as it came, None when absent.
    pub fn text_parameter(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        text(unsafe { (self.api.request_parameter)(self.raw, name.as_ptr(), std::ptr::null_mut()) })
    }

    /// Every action parameter, in URL order (x-callback parameters excluded).
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

    /// The route argument `:name` converted to `T`: `request.argument::<u32>("id")?`
    /// (`"*"`: the wildcard's remainder). Missing or malformed: `ParameterError`.
    pub fn argument<T: FromParameter>(&self, name: &str) -> Result<T, ParameterError> {
        match self.text_argument(name) {
            Some(text) => convert(name, &text),
            None => Err(ParameterError::missing::<T>(name)),
        }
    }

    /// The route argument `:name` as it came, None when the route has none
    /// of that name (or an optional group left it out).
    pub fn text_argument(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        text(unsafe { (self.api.request_argument)(self.raw, name.as_ptr()) })
    }

    /// Every route argument, in pattern order, then `*` (empty from a host
    /// older than ABI 1.2).
    pub fn arguments(&self) -> Vec<(String, String)> {
        if self.api.abi_minor < 2 {
            return Vec::new();
        }
        let count = unsafe { (self.api.request_argument_count)(self.raw) };
        (0..count)
            .filter_map(|index| {
                let name = text(unsafe { (self.api.request_argument_name)(self.raw, index) })?;
                let value = text(unsafe { (self.api.request_argument_value)(self.raw, index) })?;
                Some((name, value))
            })
            .collect()
    }

    /// The pattern of the route that matched, as registered (None from a host
    /// older than ABI 1.2).
    pub fn route(&self) -> Option<String> {
        if self.api.abi_minor < 2 {
            return None;
        }
        text(unsafe { (self.api.request_route)(self.raw) })
    }

    /// The host's number for this request, the one its log lines carry (0
    /// from a host older than ABI 1.2).
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
