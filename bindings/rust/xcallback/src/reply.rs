//! What a handler answers: a `Reply`, or a `Result` whose error becomes one.
//!
//! The domain rule, the same in C, Swift and Rust: an error's domain is the
//! plug-in's name (the host fills it in) unless the author names another.

use crate::sys;
use crate::value::ParameterError;
use std::ffi::CString;
use std::fmt;

/// A handler's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Success with output parameters, in order.
    Success(Vec<(String, String)>),
    /// An error; `domain` None: the plug-in's name.
    Error { code: String, message: String, domain: Option<String> },
    /// The user or the plug-in gave up: the `x-cancel` callback fires.
    Cancel,
    /// Not for this handler after all: the host tries the next matching route.
    Decline,
}

impl Reply {
    /// `Reply::success(&[("greeting", "Hello, Ada!")])`.
    pub fn success(parameters: &[(&str, &str)]) -> Reply {
        Reply::Success(parameters.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect())
    }

    /// An error in the plug-in's domain; [`in_domain`](Reply::in_domain) names another.
    pub fn error(code: &str, message: &str) -> Reply {
        Reply::Error { code: code.into(), message: message.into(), domain: None }
    }

    /// The same error in `domain` (a success, cancel or decline is unchanged).
    pub fn in_domain(self, domain: &str) -> Reply {
        match self {
            Reply::Error { code, message, .. } => Reply::Error { code, message, domain: Some(domain.into()) },
            other => other,
        }
    }
}

/// An error a handler returns with `?` or `Err(…)`; it becomes an error outcome.
///
/// A [`ParameterError`] becomes code `ParameterError` with its message. Any
/// other `std::error::Error` becomes an error whose code is its type's name
/// (`ParseIntError`), whose message is its `Display` text, in the plug-in's
/// domain, as a thrown error does in the Swift kit. `Error::new` chooses
/// the code. (Like `anyhow::Error`, this type does not itself implement
/// `std::error::Error`: that is what lets `?` take any error.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: String,
    pub message: String,
    /// None: the plug-in's name.
    pub domain: Option<String>,
}

impl Error {
    /// An error with this code and message, in the plug-in's domain.
    pub fn new(code: &str, message: &str) -> Error {
        Error { code: code.into(), message: message.into(), domain: None }
    }

    /// The same error in `domain`.
    pub fn in_domain(mut self, domain: &str) -> Error {
        self.domain = Some(domain.into());
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.code, self.message)
    }
}

/// The last path segment of a type's name, without generic arguments:
/// `core::num::error::ParseIntError` → `ParseIntError`.
fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let plain = full.split('<').next().unwrap_or(full);
    plain.rsplit("::").next().unwrap_or(plain)
}

impl<E: std::error::Error> From<E> for Error {
    fn from(error: E) -> Error {
        Error::new(short_type_name::<E>(), &error.to_string())
    }
}

impl From<ParameterError> for Error {
    fn from(error: ParameterError) -> Error {
        // The one rule: the plug-in's domain, as for any error it answers.
        Error::new("ParameterError", &error.message())
    }
}

impl From<Error> for Reply {
    fn from(error: Error) -> Reply {
        Reply::Error { code: error.code, message: error.message, domain: error.domain }
    }
}

/// `Result<T, xcallback::Error>`, what a handler that uses `?` returns.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a handler may return: a [`Reply`], or a [`Result<Reply>`](Result).
pub trait IntoReply {
    fn into_reply(self) -> Reply;
}

impl IntoReply for Reply {
    fn into_reply(self) -> Reply {
        self
    }
}

impl IntoReply for Result<Reply> {
    fn into_reply(self) -> Reply {
        self.unwrap_or_else(Reply::from)
    }
}

/// Strings for C: a value holding a NUL byte is cut there (C cannot carry it).
pub(crate) fn c_string(text: &str) -> CString {
    CString::new(text.split('\0').next().unwrap_or("")).unwrap_or_default()
}

/// Completes `reply` with `answer` through the host's table.
pub(crate) fn send(api: &sys::HostApi, reply: sys::Reply, answer: Reply) {
    unsafe {
        match answer {
            Reply::Success(parameters) => {
                let owned: Vec<(CString, CString)> =
                    parameters.iter().map(|(name, value)| (c_string(name), c_string(value))).collect();
                let items: Vec<sys::Param> = owned
                    .iter()
                    .map(|(name, value)| sys::Param { name: name.as_ptr(), value: value.as_ptr() })
                    .collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FromParameter;

    fn parse(text: &str) -> Result<Reply> {
        let number: i64 = text.parse()?;
        Ok(Reply::success(&[("number", &number.to_string())]))
    }

    #[test]
    fn any_error_becomes_its_type_name_in_the_plugins_domain() {
        let reply = parse("x").into_reply();
        assert_eq!(
            reply,
            Reply::Error {
                code: "ParseIntError".into(),
                message: "invalid digit found in string".into(),
                domain: None
            }
        );
        assert_eq!(parse("7").into_reply(), Reply::success(&[("number", "7")]));
    }

    #[test]
    fn a_parameter_error_keeps_its_code_and_the_plugins_domain() {
        let error: Error = crate::value::convert::<bool>("loud", "maybe").unwrap_err().into();
        assert_eq!(error.code, "ParameterError");
        assert_eq!(error.message, format!("parameter 'loud' must be {}, got 'maybe'", bool::description()));
        assert_eq!(error.domain, None);
    }

    #[test]
    fn a_named_domain_is_kept() {
        assert_eq!(
            Reply::error("NotFound", "no such guest").in_domain("guests"),
            Reply::Error { code: "NotFound".into(), message: "no such guest".into(), domain: Some("guests".into()) }
        );
        assert_eq!(Reply::Cancel.in_domain("guests"), Reply::Cancel);
        let reply: Reply = Error::new("Full", "no room").in_domain("hotel").into();
        assert!(matches!(reply, Reply::Error { domain: Some(domain), .. } if domain == "hotel"));
    }

    #[test]
    fn c_strings_stop_at_a_nul() {
        assert_eq!(c_string("a\0b").to_bytes(), b"a");
    }
}
