//! greeter://x-callback-url/greet?name=Ada  ->  success?greeting=Hello%2C%20Ada%21
//! greeter://people/:name                    ->  the same, the name from the path
//! greeter://x-callback-url/whoami            ->  the route that matched, the request's number and attempt
use xcallback::{plugin, Reply, Request};

fn greet(name: Option<String>) -> Reply {
    match name {
        Some(name) if !name.is_empty() => Reply::success(&[("greeting", &format!("Hello, {name}!"))]),
        Some(_) => Reply::error("EmptyName", "the name is empty"),
        None => Reply::error("ParameterError", "missing required parameter 'name'"),
    }
}

fn whoami(request: &Request) -> Reply {
    let route = request.route().unwrap_or_default();
    let numbered = if request.id() > 0 { "yes" } else { "no" };
    let attempt = request.attempt().to_string();
    Reply::success(&[("route", &route), ("numbered", numbered), ("attempt", &attempt)])
}

plugin! {
    name: "greeter",
    version: "1.0.0",
    summary: "Greets people: greeter://x-callback-url/greet?name=",
    routes: |routes| {
        routes.action("greeter", "greet", |request| greet(request.parameter("name")));
        routes.pattern("greeter://people/:name", |request| greet(request.argument("name")));
        routes.action("greeter", "whoami", whoami);
    }
}
