//! Write xcallback plug-ins in Rust.
//!
//! ```no_run
//! use xcallback::{plugin, Reply, Request};
//!
//! fn hello(request: &Request) -> xcallback::Result<Reply> {
//!     let name: String = request.parameter("name")?;
//!     Ok(Reply::success(&[("greeting", &format!("Hello, {name}!"))]))
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
//!
//! - [`Routes`]: `action`, `controller` and `pattern` routes; their `_later`
//!   forms hand the handler a [`Responder`] to answer from any thread.
//! - [`Request`]: typed `parameter`, `optional_parameter`, `list` and
//!   `argument` ([`FromParameter`]: the integers, `f64`, `f32`, `bool`,
//!   `String`, and enumerations made with [`parameter_enum!`]); `url`,
//!   `scheme`, `source`, `route`, `id`, `attempt`.
//! - [`Reply`]: success, error, cancel, decline; a handler may instead return
//!   [`Result<Reply>`] and use `?`: a [`ParameterError`] becomes the outcome
//!   `ParameterError`, any other error one named after its type.
//! - Errors are in the plug-in's domain (its name) unless the author names
//!   another (`in_domain`). A panic becomes the error `Panic`.

#[cfg(test)]
mod fake;
mod later;
mod reply;
mod request;
mod routes;
pub mod sys;
mod value;

pub use later::Responder;
pub use reply::{Error, IntoReply, Reply, Result};
pub use request::Request;
pub use routes::{register, Routes};
pub use value::{FromParameter, ParameterError, Problem};

/// Defines the plug-in's two entry points.
#[macro_export]
macro_rules! plugin {
    (name: $name:literal, version: $version:literal, summary: $summary:literal, routes: |$routes:ident| $body:block) => {
        #[no_mangle]
        pub extern "C" fn xcallback_plugin_descriptor() -> *const $crate::sys::Descriptor {
            static DESCRIPTOR: $crate::sys::StaticDescriptor =
                $crate::sys::StaticDescriptor($crate::sys::Descriptor::new(
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

#[cfg(test)]
mod tests {
    use super::fake::{self, FakeRequest};
    use super::*;

    parameter_enum! {
        #[derive(Debug, PartialEq)]
        enum Kind { Water = "water", Grass = "grass", Ice = "ice" }
    }

    fn error(code: &str, message: &str) -> Reply {
        Reply::error(code, message)
    }

    fn sum(request: &Request) -> Result<Reply> {
        let lhs: f64 = request.parameter("lhs")?;
        let rhs = request.optional_parameter::<f64>("rhs")?.unwrap_or(0.0);
        Ok(Reply::success(&[("result", &(lhs + rhs).to_string())]))
    }

    #[test]
    fn typed_parameters_and_their_errors() {
        fake::register(fake::api(2), |routes| routes.action("calc", "sum", sum));
        let call = |parameters: &[(&str, &str)]| {
            fake::call("calc://x-callback-url/sum", &FakeRequest::new("", parameters, &[]))
        };
        assert_eq!(call(&[("lhs", "2"), ("rhs", "4.5")]), Reply::success(&[("result", "6.5")]));
        assert_eq!(call(&[("lhs", "2")]), Reply::success(&[("result", "2")]));
        assert_eq!(call(&[]), error("ParameterError", "missing required parameter 'lhs'"));
        assert_eq!(
            call(&[("lhs", "1"), ("rhs", "two")]),
            error("ParameterError", "parameter 'rhs' must be a decimal number, got 'two'")
        );
    }

    #[test]
    fn lists_from_commas_and_repeated_keys() {
        fake::register(fake::api(2), |routes| {
            routes.pattern("pokedex://pokemons", |request: &Request| -> Result<Reply> {
                let kinds: Vec<Kind> = request.list("types")?;
                Ok(Reply::success(&[("count", &kinds.len().to_string())]))
            })
        });
        let call =
            |parameters: &[(&str, &str)]| fake::call("pokedex://pokemons", &FakeRequest::new("", parameters, &[]));
        assert_eq!(
            call(&[("types", "water, grass"), ("other", "x"), ("types", "ice,")]),
            Reply::success(&[("count", "3")])
        );
        assert_eq!(call(&[]), Reply::success(&[("count", "0")]));
        assert_eq!(
            call(&[("types", "water,fire")]),
            error("ParameterError", "parameter 'types' must be one of water, grass, ice, got 'fire'")
        );
    }

    #[test]
    fn typed_arguments_decline_and_named_domains() {
        fake::register(fake::api(2), |routes| {
            routes.pattern("zoo://animals/:id", |request: &Request| match request.argument::<u32>("id") {
                Ok(0) => Reply::error("NoAnimalZero", "animals are numbered from 1").in_domain("zoo.keeper"),
                Ok(id) => Reply::success(&[("id", &id.to_string())]),
                Err(_) => Reply::Decline,
            });
            routes.pattern("zoo://keepers/:id", |request: &Request| -> Result<Reply> {
                Ok(Reply::success(&[("id", &request.argument::<u8>("id")?.to_string())]))
            });
        });
        let animal = |id: &str| fake::call("zoo://animals/:id", &FakeRequest::new("", &[], &[("id", id)]));
        assert_eq!(animal("7"), Reply::success(&[("id", "7")]));
        assert_eq!(animal("seven"), Reply::Decline);
        assert_eq!(animal("0"), error("NoAnimalZero", "animals are numbered from 1").in_domain("zoo.keeper"));
        let keeper = |id: &str| fake::call("zoo://keepers/:id", &FakeRequest::new("", &[], &[("id", id)]));
        assert_eq!(
            keeper("300"),
            error("ParameterError", "parameter 'id' must be an integer from 0 to 255, got '300'")
        );
        assert_eq!(
            fake::call("zoo://keepers/:id", &FakeRequest::new("", &[], &[])),
            error("ParameterError", "missing required parameter 'id'")
        );
    }

    #[test]
    fn what_a_handler_learns_about_its_request() {
        let show = |request: &Request| {
            let arguments: Vec<String> =
                request.arguments().iter().map(|(name, value)| format!("{name}={value}")).collect();
            Reply::success(&[
                ("url", &request.url()),
                ("route", &request.route().unwrap_or_default()),
                ("id", &request.id().to_string()),
                ("attempt", &request.attempt().to_string()),
                ("arguments", &arguments.join(",")),
            ])
        };
        fake::register(fake::api(2), |routes| routes.controller("app", "who", "am", show));
        let request = FakeRequest::new("app://who/am", &[], &[("a", "1"), ("*", "rest")]);
        assert_eq!(
            fake::call("app://who/am", &request),
            Reply::success(&[
                ("url", "app://who/am"),
                ("route", "fake://route"),
                ("id", "42"),
                ("attempt", "2"),
                ("arguments", "a=1,*=rest")
            ])
        );
        // A 1.0 host's table ends before 1.2's accessors: none is called.
        fake::register(fake::api(0), |routes| routes.controller("old", "who", "am", show));
        assert_eq!(
            fake::call("old://who/am", &request),
            Reply::success(&[("url", "app://who/am"), ("route", ""), ("id", "0"), ("attempt", "1"), ("arguments", "")])
        );
    }

    #[test]
    fn a_panic_is_an_error_outcome_and_registration_reports_failures() {
        let (status, _) = fake::register(fake::api(2), |routes| {
            routes.action("boom", "now", |_: &Request| -> Reply { panic!("out of {}", "cheese") });
            routes.action("boom", "static", |_: &Request| -> Reply { std::panic::panic_any(7) });
        });
        assert_eq!(status, sys::OK);
        let request = FakeRequest::new("", &[], &[]);
        assert_eq!(
            fake::call("boom://x-callback-url/now", &request),
            error("Panic", "the handler panicked: out of cheese")
        );
        assert_eq!(fake::call("boom://x-callback-url/static", &request), error("Panic", "the handler panicked"));
        let (status, _) = fake::register(fake::api(2), |routes| {
            routes.pattern("bad::pattern", |_: &Request| Reply::Cancel);
            routes.pattern("good://pattern", |_: &Request| Reply::Cancel);
        });
        assert_eq!(status, -2, "the first failure is what registration returns");
        let (status, _) = fake::register(fake::api(2), |_| panic!("while registering"));
        assert_eq!(status, -1);
    }

    #[test]
    fn later_routes_answer_once_from_any_thread() {
        use std::time::Duration;
        fake::register(fake::api(2), |routes| {
            routes.action_later("slow", "echo", |request, responder| {
                let text: String = request.parameter("text")?;
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(20));
                    responder.send(Reply::success(&[("text", &text)]));
                });
                Ok(())
            });
            routes.pattern_later("slow://now/:value", |request, responder| {
                // Sent while the handler runs: held until it returns, so the
                // request it still reads stays valid.
                let value = request.text_argument("value").unwrap_or_default();
                std::thread::scope(|scope| {
                    scope.spawn(|| responder.send(Reply::success(&[("value", &value)])));
                });
                assert!(!fake::answered_with(&value), "the host got the reply before the handler returned");
                let _still_valid = request.url();
                Ok(())
            });
            routes.controller_later("slow", "drop", "it", |_, responder| {
                drop(responder);
                Ok(())
            });
            routes.action_later("slow", "panic", |_, _| panic!("too slow"));
            routes.action_later("slow", "thread-panic", |_, responder| {
                std::thread::spawn(move || {
                    let _owned = responder;
                    panic!("in a thread");
                });
                Ok(())
            });
            routes.action_later("slow", "answered-then-failed", |_, responder| {
                responder.send(Reply::Cancel);
                Err(Error::new("Late", "after the answer"))
            });
        });
        let request = |parameters: &[(&str, &str)], arguments: &[(&str, &str)]| {
            FakeRequest::new("slow://", parameters, arguments)
        };
        let settle = Duration::from_millis(50);
        assert_eq!(
            fake::call_all("slow://x-callback-url/echo", &request(&[("text", "hi")], &[]), settle),
            [Reply::success(&[("text", "hi")])]
        );
        assert_eq!(
            fake::call_all("slow://x-callback-url/echo", &request(&[], &[]), settle),
            [error("ParameterError", "missing required parameter 'text'")]
        );
        assert_eq!(
            fake::call_all("slow://now/:value", &request(&[], &[("value", "held-7c1f")]), settle),
            [Reply::success(&[("value", "held-7c1f")])]
        );
        assert_eq!(
            fake::call_all("slow://drop/it", &request(&[], &[]), settle),
            [error("NoReply", "the handler dropped its Responder without answering")]
        );
        assert_eq!(
            fake::call_all("slow://x-callback-url/panic", &request(&[], &[]), settle),
            [error("Panic", "the handler panicked: too slow")]
        );
        assert_eq!(
            fake::call_all("slow://x-callback-url/thread-panic", &request(&[], &[]), settle),
            [error("Panic", "the handler panicked")]
        );
        assert_eq!(
            fake::call_all("slow://x-callback-url/answered-then-failed", &request(&[], &[]), settle),
            [Reply::Cancel]
        );
    }
}
