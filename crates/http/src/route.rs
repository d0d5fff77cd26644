//! A small router: method and path pattern to handler. A pattern's
//! segment `{}` takes any one non-empty segment, handed to the handler in
//! order; a path that matches with a method no route takes is answered
//! 405 with `Allow`.

use super::Request;
use super::Response;
use super::serve::Answer;

/// A handler of a route: the site, the request, the path's `{}` segments.
pub type Route<S, A> = fn(&S, &Request, &[&str]) -> A;

/// Routes of a site `S`, answering `A`.
pub struct Router<S, A = Answer> {
    routes: Vec<(&'static [&'static str], &'static str, Route<S, A>)>,
}

impl From<Response> for Answer {
    fn from(r: Response) -> Answer {
        Answer::Whole(r)
    }
}

impl<S, A: From<Response>> Default for Router<S, A> {
    fn default() -> Self {
        Router { routes: Vec::new() }
    }
}

impl<S, A: From<Response>> Router<S, A> {
    /// No routes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a route: `methods` on `pattern` go to `handler`.
    pub fn at(mut self, methods: &'static [&'static str], pattern: &'static str, handler: Route<S, A>) -> Self {
        self.routes.push((methods, pattern, handler));
        self
    }

    /// The answer of the first route that takes `req`; a 405 when only
    /// other methods are routed on its path; `None` when no route's
    /// pattern matches it.
    pub fn route(&self, site: &S, req: &Request) -> Option<A> {
        let mut allowed: Vec<&str> = Vec::new();
        for (methods, pattern, handler) in &self.routes {
            let Some(params) = matches(pattern, &req.path) else {
                continue;
            };
            if methods.contains(&req.method.as_str()) {
                return Some(handler(site, req, &params));
            }
            for m in methods.iter() {
                if !allowed.contains(m) {
                    allowed.push(m);
                }
            }
        }
        (!allowed.is_empty()).then(|| {
            let allow = allowed.join(", ");
            Response::text("405 Method Not Allowed", format!("{allow} only\n"))
                .with_header(format!("Allow: {allow}"))
                .into()
        })
    }
}

/// The `{}` segments of `path` under `pattern`, if it matches.
fn matches<'a>(pattern: &str, path: &'a str) -> Option<Vec<&'a str>> {
    let (mut p, mut q) = (pattern.split('/'), path.split('/'));
    let mut params = Vec::new();
    loop {
        match (p.next(), q.next()) {
            (None, None) => return Some(params),
            (Some("{}"), Some(seg)) if !seg.is_empty() => params.push(seg),
            (Some(a), Some(b)) if a == b => {}
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(_: &(), _: &Request, params: &[&str]) -> Response {
        Response::text("200 OK", params.join(","))
    }

    #[test]
    fn methods_and_paths_find_their_handler() {
        let r: Router<(), Response> = Router::new()
            .at(&["GET", "HEAD"], "/runs/{}/result", ok)
            .at(&["POST"], "/runs/{}/stop", ok)
            .at(&["POST"], "/runs/{}/result", ok);
        let go = |m: &str, p: &str| {
            let req = Request {
                method: m.into(),
                path: p.into(),
                ..Request::default()
            };
            r.route(&(), &req)
        };
        assert_eq!(go("GET", "/runs/7/result").unwrap().body, b"7");
        assert_eq!(go("POST", "/runs/8/stop").unwrap().body, b"8");
        let refused = go("DELETE", "/runs/7/result").unwrap();
        assert_eq!(refused.status, "405 Method Not Allowed");
        assert!(refused.headers.contains(&"Allow: GET, HEAD, POST".to_string()));
        assert!(go("GET", "/runs//result").is_none());
        assert!(go("GET", "/runs/7/result/x").is_none());
        assert!(go("GET", "/../runs/7/result").is_none());
    }
}
