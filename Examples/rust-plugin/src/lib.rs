//! The Swift example's routes (Examples/swift-plugin), answering the same
//! requests with the same records, and a few more the plug-in guide's Rust
//! chapter shows (its code blocks are taken from this file):
//!
//! greeter://x-callback-url/greet?name=Ada&greeting=hi  ->  success?greeting=Hi%2C%20Ada%21
//! greeter://people/:name                                ->  the same, the name from the path
//! greeter://x-callback-url/whoami                       ->  the route that matched, the request's number and attempt
//! greeter://guests/:number                              ->  a typed argument, or decline to greeter://guests/*
//! greeter://x-callback-url/later?name=Ada              ->  answered from another thread
//! greeter://x-callback-url/panic                        ->  what a panic becomes
use std::fmt;
use xcallback::{parameter_enum, plugin, Reply, Request, Responder, Result};

parameter_enum! {
    /// What `greeting=` may ask for; anything else is a ParameterError
    /// that names these three.
    pub enum Greeting { Hello = "hello", Hi = "hi", Welcome = "welcome" }
}

fn greet(request: &Request) -> Result<Reply> {
    let name: String = request.parameter("name")?;
    let greeting = request.optional_parameter("greeting")?.unwrap_or(Greeting::Hello);
    hello(&name, greeting)
}

fn hello(name: &str, greeting: Greeting) -> Result<Reply> {
    if name.is_empty() {
        return Err(EmptyName.into());
    }
    let word = match greeting {
        Greeting::Hello => "Hello",
        Greeting::Hi => "Hi",
        Greeting::Welcome => "Welcome",
    };
    Ok(Reply::success(&[("greeting", &format!("{word}, {name}!"))]))
}

/// Any `std::error::Error` a handler returns becomes an error outcome: the
/// type's name is the code, its text the message, the plug-in's name the
/// domain (errorCode=EmptyName&errorDomain=greeter).
#[derive(Debug)]
struct EmptyName;

impl fmt::Display for EmptyName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("the name is empty")
    }
}

impl std::error::Error for EmptyName {}

/// What the binding tells a handler about its request: the route that
/// matched, the host's number for it (the one its log lines carry) and which
/// attempt at it this is (1 unless a queue hands it out again).
fn whoami(request: &Request) -> Reply {
    let route = request.route().unwrap_or_default();
    let numbered = if request.id() > 0 { "yes" } else { "no" };
    let attempt = request.attempt().to_string();
    Reply::success(&[("route", &route), ("numbered", numbered), ("attempt", &attempt)])
}

/// greeter://guests/7: a typed argument. Not a number: not for this
/// route, so decline, and the host tries greeter://guests/* next.
fn guest(request: &Request) -> Reply {
    match request.argument::<u32>("number") {
        Ok(0) => Reply::error("NoSuchGuest", "guests are numbered from 1").in_domain("guests"),
        Ok(number) => Reply::success(&[("greeting", &format!("Hello, guest {number}!"))]),
        Err(_) => Reply::Decline,
    }
}

/// Answered from another thread: copy out of the request what the thread
/// needs, for the request lives only as long as the handler call.
fn later(request: &Request, responder: Responder) -> Result<()> {
    let name: String = request.parameter("name")?;
    std::thread::spawn(move || responder.send(hello(&name, Greeting::Hello)));
    Ok(())
}

plugin! {
    name: "greeter",
    version: "1.0.0",
    summary: "Greets people: greeter://x-callback-url/greet?name=",
    routes: |routes| {
        routes.action("greeter", "greet", greet);
        routes.pattern("greeter://people/:name", |request| hello(&request.argument::<String>("name")?, Greeting::Hello));
        routes.action("greeter", "whoami", whoami);
        routes.pattern("greeter://guests/:number", guest);
        routes.pattern("greeter://guests/*", |request| hello(&request.argument::<String>("*")?, Greeting::Hello));
        routes.action_later("greeter", "later", later);
        routes.action("greeter", "panic", |_| -> Reply { panic!("asked to") });
    }
}
