//! Typed values: what a parameter's or argument's text converts to, and the
//! error a missing or malformed one gives. The phrases and messages are the
//! Swift kit's (`ParameterValue`, `ParameterError`) word for word, so a
//! request gives the same record whichever language the plug-in is in.

use std::fmt;

/// A type a parameter's text converts to. Implemented for `String`, the
/// integers, `f64`, `f32` and `bool`; [`parameter_enum!`](crate::parameter_enum)
/// implements it for an enumeration of fixed strings.
pub trait FromParameter: Sized {
    /// What a valid value looks like, as a phrase that completes "must be …":
    /// "an integer", "one of hello, hi, welcome".
    fn description() -> String;
    /// The value `text` stands for, or None when it does not convert.
    fn from_parameter(text: &str) -> Option<Self>;
}

impl FromParameter for String {
    fn description() -> String {
        "text".into()
    }
    fn from_parameter(text: &str) -> Option<Self> {
        Some(text.to_string())
    }
}

/// Decimal digits with an optional sign: `+7`, `-7`, `7`; nothing else
/// (Rust's own parser agrees; this says so in one place).
macro_rules! integer {
    ($($type:ty => $description:expr),* $(,)?) => {$(
        impl FromParameter for $type {
            fn description() -> String {
                $description
            }
            fn from_parameter(text: &str) -> Option<Self> {
                text.parse().ok()
            }
        }
    )*};
}

integer! {
    // i64 and isize are Swift's `Int` on 64-bit Linux; u64 and usize its `UInt`.
    i64 => "an integer".into(),
    isize => "an integer".into(),
    u64 => "a non-negative integer".into(),
    usize => "a non-negative integer".into(),
    i32 => format!("an integer from {} to {}", i32::MIN, i32::MAX),
    u32 => format!("an integer from 0 to {}", u32::MAX),
    i16 => format!("an integer from {} to {}", i16::MIN, i16::MAX),
    u16 => format!("an integer from 0 to {}", u16::MAX),
    i8 => format!("an integer from {} to {}", i8::MIN, i8::MAX),
    u8 => format!("an integer from 0 to {}", u8::MAX),
}

/// `[+-]? digits [. digits] [(e|E) [+-]? digits]`, at least one digit before
/// the exponent: no "nan", "inf", hex or blanks (Rust's parser takes those).
fn is_decimal(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut index = 0;
    let digits = |index: &mut usize| {
        let start = *index;
        while *index < bytes.len() && bytes[*index].is_ascii_digit() {
            *index += 1;
        }
        *index - start
    };
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        index += 1;
    }
    let mut mantissa = digits(&mut index);
    if bytes.get(index) == Some(&b'.') {
        index += 1;
        mantissa += digits(&mut index);
    }
    if mantissa == 0 {
        return false;
    }
    if matches!(bytes.get(index), Some(b'e' | b'E')) {
        index += 1;
        if matches!(bytes.get(index), Some(b'+' | b'-')) {
            index += 1;
        }
        if digits(&mut index) == 0 {
            return false;
        }
    }
    index == bytes.len()
}

impl FromParameter for f64 {
    fn description() -> String {
        "a decimal number".into()
    }
    fn from_parameter(text: &str) -> Option<Self> {
        let value: f64 = text.parse().ok().filter(|_| is_decimal(text))?;
        value.is_finite().then_some(value)
    }
}

impl FromParameter for f32 {
    fn description() -> String {
        "a decimal number".into()
    }
    fn from_parameter(text: &str) -> Option<Self> {
        let value: f32 = text.parse().ok().filter(|_| is_decimal(text))?;
        value.is_finite().then_some(value)
    }
}

impl FromParameter for bool {
    fn description() -> String {
        "true or false".into()
    }
    /// true/false, 1/0, yes/no, in any case.
    fn from_parameter(text: &str) -> Option<Self> {
        match text.to_lowercase().as_str() {
            "true" | "1" | "yes" => Some(true),
            "false" | "0" | "no" => Some(false),
            _ => None,
        }
    }
}

/// An enumeration whose values are fixed strings, usable as a typed
/// parameter (`ParameterError` names the strings when a value is not one):
///
/// ```
/// xcallback::parameter_enum! {
///     #[derive(Debug, PartialEq)]
///     pub enum Greeting { Hello = "hello", Hi = "hi", Welcome = "welcome" }
/// }
/// use xcallback::FromParameter;
/// assert_eq!(Greeting::from_parameter("hi"), Some(Greeting::Hi));
/// assert_eq!(Greeting::description(), "one of hello, hi, welcome");
/// assert_eq!(Greeting::Welcome.as_str(), "welcome");
/// ```
#[macro_export]
macro_rules! parameter_enum {
    ($(#[$meta:meta])* $visibility:vis enum $name:ident { $($case:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        $visibility enum $name { $($case),+ }

        impl $name {
            /// The string this value stands for in a URL.
            #[allow(dead_code)]
            $visibility fn as_str(self) -> &'static str {
                match self { $($name::$case => $text),+ }
            }
        }

        impl $crate::FromParameter for $name {
            fn description() -> ::std::string::String {
                ::std::string::String::from("one of ") + &[$($text),+].join(", ")
            }
            fn from_parameter(text: &str) -> ::std::option::Option<Self> {
                match text { $($text => ::std::option::Option::Some($name::$case),)+ _ => ::std::option::Option::None }
            }
        }
    };
}

/// What went wrong with a typed parameter or argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    Missing,
    Invalid { value: String },
}

/// A typed parameter or route argument that is missing or does not convert.
/// `?` turns it into an [`Error`](crate::Error) whose code is
/// `ParameterError` and whose message is [`message`](ParameterError::message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterError {
    /// The parameter's name, as in the URL.
    pub name: String,
    /// What was expected: "a decimal number", "one of water, grass".
    pub expected: String,
    pub problem: Problem,
}

impl ParameterError {
    pub(crate) fn missing<T: FromParameter>(name: &str) -> Self {
        ParameterError { name: name.into(), expected: T::description(), problem: Problem::Missing }
    }

    pub(crate) fn invalid<T: FromParameter>(name: &str, value: &str) -> Self {
        ParameterError {
            name: name.into(),
            expected: T::description(),
            problem: Problem::Invalid { value: value.into() },
        }
    }

    /// "missing required parameter 'lhs'" or "parameter 'lhs' must be a
    /// decimal number, got 'abc'" (a value past 80 characters is cut, with
    /// "…"): the Swift kit's words, and a C plug-in's, so a caller sees one
    /// message whatever the plug-in is written in.
    pub fn message(&self) -> String {
        match &self.problem {
            Problem::Missing => format!("missing required parameter '{}'", self.name),
            Problem::Invalid { value } => {
                format!("parameter '{}' must be {}, got '{}'", self.name, self.expected, shortened(value))
            }
        }
    }
}

impl fmt::Display for ParameterError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message())
    }
}

/// Values can be a line long; a message needs only enough to recognise one.
fn shortened(value: &str) -> String {
    const LIMIT: usize = 80;
    match value.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_string(),
    }
}

/// `text` converted to `T`, or the error that names `name`.
pub(crate) fn convert<T: FromParameter>(name: &str, text: &str) -> Result<T, ParameterError> {
    T::from_parameter(text).ok_or_else(|| ParameterError::invalid::<T>(name, text))
}

/// The items of a list parameter's values, in order: each value split on
/// `,`, blanks (space, tab) around an item trimmed, empty items skipped.
pub(crate) fn list_items<'a>(values: impl Iterator<Item = &'a str>) -> impl Iterator<Item = &'a str> {
    values.flat_map(|value| value.split(',')).map(|item| item.trim_matches([' ', '\t'])).filter(|item| !item.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::parameter_enum! {
        #[derive(Debug, PartialEq)]
        enum Kind { Water = "water", Grass = "grass" }
    }

    #[test]
    fn integers_take_a_sign_and_digits_only() {
        assert_eq!(i64::from_parameter("+7"), Some(7));
        assert_eq!(i64::from_parameter("-7"), Some(-7));
        assert_eq!(i64::from_parameter(" 7"), None);
        assert_eq!(i64::from_parameter("7.0"), None);
        assert_eq!(i64::from_parameter("9223372036854775808"), None);
        assert_eq!(u32::from_parameter("-1"), None);
        assert_eq!(i32::description(), "an integer from -2147483648 to 2147483647");
        assert_eq!(i64::description(), "an integer");
    }

    #[test]
    fn decimals_are_decimal_notation_only() {
        for good in ["2", "4.2", "-1e3", ".5", "5.", "+1E+2"] {
            assert!(f64::from_parameter(good).is_some(), "{good}");
        }
        for bad in ["", ".", "e3", "1e", "nan", "inf", "infinity", "0x10", " 1", "1 ", "1e999", "1,5"] {
            assert!(f64::from_parameter(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn booleans_in_three_spellings_and_any_case() {
        assert_eq!(bool::from_parameter("YES"), Some(true));
        assert_eq!(bool::from_parameter("0"), Some(false));
        assert_eq!(bool::from_parameter("on"), None);
    }

    #[test]
    fn enumerations_name_their_strings() {
        assert_eq!(Kind::from_parameter("grass"), Some(Kind::Grass));
        assert_eq!(Kind::from_parameter("Grass"), None);
        assert_eq!(Kind::description(), "one of water, grass");
        assert_eq!(Kind::Water.as_str(), "water");
    }

    #[test]
    fn messages_are_the_swift_kits() {
        assert_eq!(ParameterError::missing::<f64>("lhs").message(), "missing required parameter 'lhs'");
        assert_eq!(ParameterError::missing::<String>("name").message(), "missing required parameter 'name'");
        assert_eq!(
            convert::<Kind>("type", "fire").unwrap_err().message(),
            "parameter 'type' must be one of water, grass, got 'fire'"
        );
        let long = "é".repeat(81);
        let message = convert::<i64>("n", &long).unwrap_err().message();
        assert!(message.ends_with(&format!("got '{}…'", "é".repeat(80))), "{message}");
    }

    #[test]
    fn list_items_split_trim_and_skip_empties() {
        let items: Vec<&str> = list_items(["water, grass,,", " \tice"].into_iter()).collect();
        assert_eq!(items, ["water", "grass", "ice"]);
    }
}
