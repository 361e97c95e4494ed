//! The executor, sockets, timers and HTTP client on the poll(2) reactor, against tiny servers
//! on 127.0.0.1 (a thread per connection, scripted).

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use oma_llm::transport::{send, BodyError, ErrorStyle, HttpRequest, HttpResponse, TransportConfig};
use oma_llm::LlmError;
use tokio_util::sync::CancellationToken;

use crate::test_reactor::{new_exec, run_until, Counts, PollReactor};
use crate::{Exec, LocalHttp, Sleep};

/// A server on 127.0.0.1 running `handler(connection index, stream)` on a thread per
/// connection; its base URL and the number of connections accepted.
fn serve(handler: impl Fn(usize, TcpStream) + Send + Sync + 'static) -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = accepted.clone();
    let handler = Arc::new(handler);
    thread::spawn(move || {
        for (i, s) in l.incoming().enumerate() {
            let Ok(s) = s else { return };
            a.fetch_add(1, Ordering::SeqCst);
            let h = handler.clone();
            thread::spawn(move || h(i, s));
        }
    });
    (base, accepted)
}

/// One request (head and Content-Length body) as text; `None` when the client closed first.
fn read_request(s: &mut impl Read) -> Option<String> {
    let mut req = Vec::new();
    let mut b = [0u8; 4096];
    loop {
        if let Some(i) = req.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&req[..i]).to_lowercase();
            let len: usize =
                head.lines().find_map(|l| l.strip_prefix("content-length: ")).map_or(0, |v| v.trim().parse().unwrap());
            if req.len() >= i + 4 + len {
                return Some(String::from_utf8_lossy(&req).into_owned());
            }
        }
        let n = s.read(&mut b).ok().filter(|&n| n > 0)?;
        req.extend_from_slice(&b[..n]);
    }
}

fn ok(body: &str) -> String {
    format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len())
}

fn post(url: &str) -> HttpRequest {
    HttpRequest {
        method: reqwest::Method::POST,
        url: url.to_string(),
        headers: Arc::new(vec![("content-type", "application/json".into())]),
        body: Bytes::from_static(b"{\"q\":1}"),
    }
}

fn cfg(timeout_ms: u64, max_retries: u32) -> TransportConfig {
    TransportConfig { timeout: Duration::from_millis(timeout_ms), max_retries, egress: None }
}

/// `send` and the whole body as text.
async fn call(
    http: &LocalHttp<PollReactor>,
    req: &HttpRequest,
    cfg: &TransportConfig,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let resp = send(http, req, ErrorStyle::OpenAi, cfg, cancel).await.map_err(|e| e.message)?;
    let body = HttpResponse::bytes(resp, 1 << 20).await.map_err(|e| format!("{e:?}"))?;
    Ok(String::from_utf8(body.to_vec()).unwrap())
}

/// Every watch closed, no timer running, no task left.
/// Three calls to `url` one after another on one client, each answered `{"n":<k>}` by a server
/// that counts the requests of a connection; the client, for the caller's pool checks.
fn three_calls_in_turn(exec: &Rc<Exec<PollReactor>>, url: String) -> Rc<LocalHttp<PollReactor>> {
    let http = Rc::new(LocalHttp::new(exec));
    let h = http.clone();
    let bodies = run_until(exec, async move {
        let mut out = Vec::new();
        for _ in 0..3 {
            out.push(call(&h, &post(&url), &cfg(10_000, 0), &CancellationToken::new()).await);
        }
        out
    });
    assert_eq!(bodies, vec![Ok("{\"n\":1}".to_string()), Ok("{\"n\":2}".into()), Ok("{\"n\":3}".into())]);
    http
}

fn assert_quiet(exec: &Exec<PollReactor>, st: &RefCell<crate::test_reactor::State>) {
    let st = st.borrow();
    assert_eq!(st.counts.watches_opened, st.counts.watches_closed, "{:?}", st.counts);
    assert_eq!(st.timers_running(), 0);
    assert_eq!(exec.live_tasks(), 0);
}

/// The reactor's counts once the client and then the loop are dropped (what either left open).
fn counts_after_drop<H>(http: H, exec: Rc<Exec<PollReactor>>, st: &RefCell<crate::test_reactor::State>) -> Counts {
    drop(http);
    drop(exec);
    st.borrow().counts
}

#[test]
fn a_keep_alive_connection_is_reused() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let (base, accepted) = serve(move |_, mut s| {
        let mut n = 0;
        while let Some(req) = read_request(&mut s) {
            s2.lock().unwrap().push(req);
            n += 1;
            s.write_all(ok(&format!("{{\"n\":{n}}}")).as_bytes()).unwrap();
        }
    });
    let (exec, st, _) = new_exec();
    let http = three_calls_in_turn(&exec, format!("{base}/v1/chat?x=1"));
    // One connection for the three calls, back in the pool after each.
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert_eq!(http.idle_connections(), 1);
    let seen = seen.lock().unwrap();
    let host = base.trim_start_matches("http://");
    for req in seen.iter() {
        assert!(req.starts_with(&format!("POST /v1/chat?x=1 HTTP/1.1\r\nhost: {host}\r\n")), "{req}");
        assert!(req.contains("\r\ncontent-length: 7\r\n\r\n{\"q\":1}"), "{req}");
    }
    // One watch (the pooled connection) and the timeout timers kept for reuse.
    let c = st.borrow().counts;
    assert_eq!((c.watches_opened, c.watches_closed), (1, 0));
    assert_eq!(st.borrow().timers_running(), 0);
    let c = counts_after_drop(http, exec, &st);
    assert_eq!((c.watches_closed, c.timers_closed), (1, c.timers_opened));
}

#[test]
fn a_response_split_across_many_reads() {
    let body = "{\"text\":\"".to_string() + &"abcdefgh".repeat(20) + "\"}";
    let chunked: String = body
        .as_bytes()
        .chunks(7)
        .map(|c| format!("{:x}\r\n{}\r\n", c.len(), std::str::from_utf8(c).unwrap()))
        .collect();
    let reply = format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{chunked}0\r\n\r\n");
    let r2 = reply.clone();
    let (base, _) = serve(move |_, mut s| {
        s.set_nodelay(true).unwrap();
        read_request(&mut s).unwrap();
        // A few bytes at a time with pauses: each piece arrives on its own.
        for piece in r2.as_bytes().chunks(5) {
            s.write_all(piece).unwrap();
            thread::sleep(Duration::from_millis(1));
        }
        let _ = read_request(&mut s);
    });
    let (exec, st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let h = http.clone();
    let got = run_until(&exec, async move {
        call(&h, &post(&format!("{base}/x")), &cfg(10_000, 0), &CancellationToken::new()).await
    });
    assert_eq!(got, Ok(body));
    let reports = st.borrow().counts.io_reports;
    // Far fewer than the pieces only if the loop's thread was held off for most of the
    // pauses.
    assert!(reports > 10, "only {reports} readiness reports for {} pieces", reply.len() / 5);
    assert_eq!(http.idle_connections(), 1);
}

#[test]
fn a_peer_closing_mid_body() {
    let (base, _) = serve(|_, mut s| {
        read_request(&mut s).unwrap();
        s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n0123456789").unwrap();
        // Dropped: the connection closes 990 bytes short.
    });
    let (exec, st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let h = http.clone();
    let got = run_until(&exec, async move {
        let resp = send(&*h, &post(&base), ErrorStyle::OpenAi, &cfg(10_000, 0), &CancellationToken::new())
            .await
            .map_err(|e| e.message)?;
        HttpResponse::bytes(resp, 1 << 20).await.map_err(|e| format!("{e:?}"))
    });
    assert_eq!(got, Err(format!("{:?}", BodyError::Connection)));
    // Not pooled, closed.
    assert_eq!(http.idle_connections(), 0);
    assert_quiet(&exec, &st);
}

#[test]
fn a_closed_pooled_connection_is_replaced() {
    // The server answers one request per connection and closes it without saying so.
    let (base, accepted) = serve(|_, mut s| {
        read_request(&mut s).unwrap();
        s.write_all(ok("{}").as_bytes()).unwrap();
    });
    let (exec, st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let (h, e) = (http.clone(), exec.clone());
    let got = run_until(&exec, async move {
        let first = call(&h, &post(&base), &cfg(10_000, 0), &CancellationToken::new()).await;
        // Long enough for the server's FIN to arrive and the loop to see it.
        Sleep::new(&e, Duration::from_millis(30)).await;
        let second = call(&h, &post(&base), &cfg(10_000, 0), &CancellationToken::new()).await;
        (first, second)
    });
    assert_eq!(got, (Ok("{}".to_string()), Ok("{}".to_string())));
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    drop(http);
    assert_quiet(&exec, &st);
}

#[test]
fn timers_fire_in_order_and_are_reused() {
    let (exec, st, _) = new_exec();
    let e = exec.clone();
    let order = Rc::new(RefCell::new(Vec::new()));
    let o = order.clone();
    let start = Instant::now();
    run_until(&exec, async move {
        let (a, b) = (o.clone(), o.clone());
        let e1 = e.clone();
        e.spawn(async move {
            Sleep::new(&e1, Duration::from_millis(40)).await;
            a.borrow_mut().push((40, start.elapsed()));
        });
        let e2 = e.clone();
        e.spawn(async move {
            Sleep::new(&e2, Duration::from_millis(10)).await;
            b.borrow_mut().push((10, start.elapsed()));
        });
        Sleep::new(&e, Duration::from_millis(60)).await;
    });
    let order = order.borrow();
    assert_eq!(order.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![10, 40]);
    assert!(order[0].1 >= Duration::from_millis(10) && order[1].1 >= Duration::from_millis(40), "{order:?}");
    assert!(start.elapsed() >= Duration::from_millis(60));
    let opened = st.borrow().counts.timers_opened;
    assert_eq!(opened, 3);
    // Sequential sleeps take the stopped timers again: none opened.
    let e = exec.clone();
    run_until(&exec, async move {
        for _ in 0..50 {
            Sleep::new(&e, Duration::ZERO).await;
        }
    });
    assert_eq!(st.borrow().counts.timers_opened, opened);
    assert_quiet(&exec, &st);
}

/// A server that reads each request and then holds the connection for 5 s without a word.
fn never_answers() -> (String, Arc<AtomicUsize>) {
    serve(|_, mut s| {
        read_request(&mut s);
        thread::sleep(Duration::from_secs(5));
    })
}

#[test]
fn a_request_times_out_on_the_loops_timer() {
    let (base, _) = never_answers();
    let (exec, st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let h = http.clone();
    let start = Instant::now();
    let got = run_until(&exec, async move { call(&h, &post(&base), &cfg(50, 0), &CancellationToken::new()).await });
    assert_eq!(got, Err(LlmError::timeout().message));
    assert!(start.elapsed() >= Duration::from_millis(50) && start.elapsed() < Duration::from_secs(4));
    assert_quiet(&exec, &st);
}

/// A request to a server that never answers, cancelled after 20 ms by `cancel_after`; what
/// the loop had open afterwards.
fn cancelled_mid_request(cancel_after: impl FnOnce(CancellationToken, Rc<Exec<PollReactor>>)) -> Counts {
    let (base, accepted) = never_answers();
    let (exec, st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let h = http.clone();
    let token = CancellationToken::new();
    cancel_after(token.clone(), exec.clone());
    let got = run_until(&exec, async move { call(&h, &post(&base), &cfg(10_000, 2), &token).await });
    assert_eq!(got, Err(LlmError::aborted().message));
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    // The request's connection is closed, its timeout timer stopped, its task gone.
    assert_eq!(http.idle_connections(), 0);
    assert_quiet(&exec, &st);
    let c = counts_after_drop(http, exec, &st);
    assert_eq!(c.timers_opened, c.timers_closed);
    c
}

#[test]
fn a_request_cancelled_on_the_loop_leaves_nothing_open() {
    let c = cancelled_mid_request(|token, exec| {
        let e = exec.clone();
        exec.spawn(async move {
            Sleep::new(&e, Duration::from_millis(20)).await;
            token.cancel();
        });
    });
    assert_eq!(c.watches_opened, 1);
}

#[test]
fn a_request_cancelled_from_another_thread_leaves_nothing_open() {
    let c = cancelled_mid_request(|token, _| {
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            token.cancel();
        });
    });
    assert_eq!(c.watches_opened, 1);
}

#[test]
fn dropping_a_request_mid_body_closes_its_socket() {
    let (base, _) = serve(|_, mut s| {
        read_request(&mut s);
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc");
        thread::sleep(Duration::from_secs(5));
    });
    let (exec, st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let h = http.clone();
    let e = exec.clone();
    let got = run_until(&exec, async move {
        let resp = send(&*h, &post(&base), ErrorStyle::OpenAi, &cfg(10_000, 0), &CancellationToken::new())
            .await
            .map_err(|e| e.message)?;
        // The body never completes: the read is dropped when the timer wins.
        let body = HttpResponse::bytes(resp, 1 << 20);
        Ok::<_, String>(first(body, Sleep::new(&e, Duration::from_millis(20))).await.is_none())
    });
    assert_eq!(got, Ok(true));
    assert_eq!(http.idle_connections(), 0);
    assert_quiet(&exec, &st);
}

/// `a`'s output, or `None` when `b` finishes first (`a` is dropped then).
async fn first<A: Future, B: Future>(a: A, b: B) -> Option<A::Output> {
    let (mut a, mut b) = (Box::pin(a), Box::pin(b));
    poll_fn(move |cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        b.as_mut().poll(cx).map(|_| None)
    })
    .await
}

/// A value sent from any thread.
struct Slot<T> {
    inner: Mutex<(Option<T>, Option<Waker>)>,
}

impl<T> Slot<T> {
    fn put(&self, v: T) {
        let w = {
            let mut g = self.inner.lock().unwrap();
            g.0 = Some(v);
            g.1.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }

    fn take(&self) -> impl Future<Output = T> + '_ {
        poll_fn(move |cx| {
            let mut g = self.inner.lock().unwrap();
            match g.0.take() {
                Some(v) => Poll::Ready(v),
                None => {
                    g.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}

#[test]
fn tasks_are_woken_from_other_threads() {
    let (exec, st, pipe) = new_exec();
    let e = exec.clone();
    let total = run_until(&exec, async move {
        let done = Rc::new(Cell::new(0usize));
        let slots: Vec<Arc<Slot<usize>>> =
            (0..16).map(|_| Arc::new(Slot { inner: Mutex::new((None, None)) })).collect();
        for s in &slots {
            let (s, d) = (s.clone(), done.clone());
            e.spawn(async move {
                let v = s.take().await;
                d.set(d.get() + v);
            });
        }
        for (i, s) in slots.iter().enumerate() {
            let s = s.clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis((i % 4) as u64 * 3));
                s.put(i + 1);
            });
        }
        // Until every task has run: polled again whenever any of them was woken.
        let d = done.clone();
        poll_fn(move |cx: &mut Context<'_>| {
            if d.get() == (1..=16).sum::<usize>() {
                Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        })
        .await;
        done.get()
    });
    assert_eq!(total, 136);
    assert!(pipe.wakes.load(Ordering::SeqCst) > 0);
    assert_quiet(&exec, &st);
}

#[test]
fn a_wake_on_the_loop_thread_wakes_the_loop_only_outside_a_callback() {
    let (exec, _, pipe) = new_exec();
    let parked: Rc<RefCell<Option<Waker>>> = Rc::default();
    let p = parked.clone();
    let polls = Rc::new(Cell::new(0));
    let n = polls.clone();
    exec.spawn(poll_fn(move |cx: &mut Context<'_>| {
        n.set(n.get() + 1);
        *p.borrow_mut() = Some(cx.waker().clone());
        Poll::<()>::Pending
    }));
    assert_eq!(polls.get(), 1);
    let w = parked.borrow().clone().unwrap();
    // Inside a callback (the executor is draining): queued, no wake-up of the loop.
    let before = pipe.wakes.load(Ordering::SeqCst);
    exec.run_woken(|| w.wake_by_ref());
    assert_eq!((pipe.wakes.load(Ordering::SeqCst), polls.get()), (before, 2));
    // Outside (say, from a napi call): queued, and the loop is woken to poll it.
    w.wake_by_ref();
    assert_eq!((pipe.wakes.load(Ordering::SeqCst), polls.get()), (before + 1, 2));
    exec.on_remote_wake();
    assert_eq!(polls.get(), 3);
}

#[test]
fn held_work_keeps_the_loop_alive() {
    let (exec, st, _) = new_exec();
    let alive = || st.borrow().counts.keep_alive;
    exec.hold();
    exec.hold();
    assert!(alive());
    exec.release();
    assert!(alive());
    exec.release();
    assert!(!alive());
}

#[test]
fn a_task_spawned_by_a_task_runs_in_the_same_drain() {
    let (exec, _, _) = new_exec();
    let ran = Rc::new(Cell::new(false));
    let (e, r) = (exec.clone(), ran.clone());
    exec.spawn(async move {
        e.spawn(async move { r.set(true) });
    });
    assert!(ran.get());
    assert_eq!(exec.live_tasks(), 0);
}

#[test]
fn a_future_made_in_its_task_runs_at_once() {
    let (exec, _, _) = new_exec();
    let ran = Rc::new(Cell::new(0));
    let r = ran.clone();
    exec.spawn_with(move || async move { r.set(r.get() + 1) });
    assert_eq!((ran.get(), exec.live_tasks()), (1, 0));
}

#[test]
fn one_executor_per_thread() {
    let (exec, _, _) = new_exec();
    assert!(std::panic::catch_unwind(new_exec).is_err());
    drop(exec);
    // Once it is gone, the thread may have another.
    let _ = new_exec();
}

// ---------------------------------------------------------------------------------------
// HTTPS: TLS over the loop's sockets, against a rustls server on 127.0.0.1 with the committed
// test certificates (testdata/tls, README there).

const TLS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/tls");

type TlsServerStream = rustls::StreamOwned<rustls::ServerConnection, TcpStream>;

/// The ALPN protocol each TLS connection agreed on.
type Negotiated = Arc<Mutex<Vec<Option<Vec<u8>>>>>;

/// Makes the certificate verifier trust the test CA: on Linux it reads `SSL_CERT_FILE` instead
/// of the system's bundle when it is made (once per process, on the first HTTPS request; every
/// TLS test calls this first, with the same value).
fn trust_test_ca() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::env::set_var("SSL_CERT_FILE", format!("{TLS_DIR}/ca.pem")));
}

/// `serve` over TLS with the certificate `name` (`leaf`: signed by the test CA; `untrusted`:
/// self-signed). The server offers h2 and http/1.1 by ALPN; `handler` gets the stream after
/// the handshake, and the protocol the client chose is recorded.
fn serve_tls(
    name: &str,
    handler: impl Fn(usize, &mut TlsServerStream) + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>, Negotiated) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    trust_test_ca();
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(format!("{TLS_DIR}/{name}.pem")).unwrap().map(Result::unwrap).collect();
    let key = PrivateKeyDer::from_pem_file(format!("{TLS_DIR}/{name}.key")).unwrap();
    let mut sc = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    sc.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let sc = Arc::new(sc);
    let alpn = Arc::new(Mutex::new(Vec::new()));
    let a = alpn.clone();
    let (base, accepted) = serve(move |i, s| {
        let mut tls = rustls::StreamOwned::new(rustls::ServerConnection::new(sc.clone()).unwrap(), s);
        // The handshake, before anything is read.
        while tls.conn.is_handshaking() {
            if tls.conn.complete_io(&mut tls.sock).is_err() {
                return;
            }
        }
        a.lock().unwrap().push(tls.conn.alpn_protocol().map(<[u8]>::to_vec));
        handler(i, &mut tls)
    });
    (base.replace("http://", "https://"), accepted, alpn)
}

fn write_tls(s: &mut TlsServerStream, bytes: &[u8]) {
    s.write_all(bytes).unwrap();
    s.flush().unwrap();
}

#[test]
fn https_requests_share_a_keep_alive_connection_and_speak_http1() {
    let (base, accepted, alpn) = serve_tls("leaf", |_, s| {
        let mut n = 0;
        while let Some(req) = read_request(s) {
            assert!(req.ends_with("{\"q\":1}"), "{req}");
            n += 1;
            write_tls(s, ok(&format!("{{\"n\":{n}}}")).as_bytes());
        }
    });
    let (exec, st, _) = new_exec();
    let http = three_calls_in_turn(&exec, format!("{base}/v1/chat"));
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert_eq!(http.idle_connections(), 1);
    assert_eq!(http.requests(), 3);
    // The client offers http/1.1 only (LocalHttp speaks HTTP/1.1), though the server has h2.
    assert_eq!(*alpn.lock().unwrap(), vec![Some(b"http/1.1".to_vec())]);
    let c = counts_after_drop(http, exec, &st);
    assert_eq!(c.watches_opened, c.watches_closed);
}

#[test]
fn an_untrusted_certificate_is_refused_before_anything_is_sent() {
    let seen = Arc::new(AtomicUsize::new(0));
    let s2 = seen.clone();
    let (base, accepted, _) = serve_tls("untrusted", move |_, s| {
        if read_request(s).is_some() {
            s2.fetch_add(1, Ordering::SeqCst);
        }
    });
    let (exec, st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let h = http.clone();
    let got = run_until(&exec, async move {
        call(&h, &post(&format!("{base}/v1/chat")), &cfg(10_000, 0), &CancellationToken::new()).await
    });
    // reqwest's answer to the same server: a connection error, as any failed handshake.
    assert_eq!(got, Err(LlmError::connection().message));
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    assert_eq!(http.idle_connections(), 0);
    assert_quiet(&exec, &st);
}

#[test]
fn an_https_500_is_retried_and_a_stream_is_read_piece_by_piece() {
    let served = Arc::new(AtomicUsize::new(0));
    let (base, accepted, _) = serve_tls("leaf", move |_, s| {
        while let Some(_req) = read_request(s) {
            if served.fetch_add(1, Ordering::SeqCst) == 0 {
                let body = "{\"error\":{\"message\":\"boom\"}}";
                let head = format!("HTTP/1.1 500 Oops\r\nretry-after-ms: 1\r\ncontent-length: {}\r\n\r\n", body.len());
                write_tls(s, format!("{head}{body}").as_bytes());
                continue;
            }
            // An event stream in chunks, each written (and flushed into a TLS record) on its own.
            write_tls(s, b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n");
            for i in 0..5 {
                let ev = format!("data: {{\"i\":{i}}}\n\n");
                write_tls(s, format!("{:x}\r\n{ev}\r\n", ev.len()).as_bytes());
                thread::sleep(Duration::from_millis(2));
            }
            write_tls(s, b"0\r\n\r\n");
        }
    });
    let (exec, _st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let h = http.clone();
    let url = format!("{base}/v1/chat");
    let (pieces, next) = run_until(&exec, async move {
        let mut resp =
            send(&*h, &post(&url), ErrorStyle::OpenAi, &cfg(10_000, 2), &CancellationToken::new()).await.unwrap();
        let mut pieces = Vec::new();
        while let Some(p) = HttpResponse::chunk(&mut resp).await.unwrap() {
            pieces.push(String::from_utf8(p.to_vec()).unwrap());
        }
        // Read to its end: the connection is back in the pool for the next call.
        assert_eq!(h.idle_connections(), 1);
        let next = call(&h, &post(&url), &cfg(10_000, 0), &CancellationToken::new()).await;
        (pieces, next)
    });
    assert_eq!(pieces.concat(), (0..5).map(|i| format!("data: {{\"i\":{i}}}\n\n")).collect::<String>());
    // The pieces come as the server sends them, not gathered into one body.
    assert!(pieces.len() >= 2, "{pieces:?}");
    assert!(next.is_ok(), "{next:?}");
    // The 500's connection is not reused (its body is not read); the retry's is, by the next call.
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    assert_eq!(http.requests(), 3);
}

#[test]
fn an_https_request_cancelled_mid_stream_leaves_nothing_open() {
    let (base, _, _) = serve_tls("leaf", |_, s| {
        read_request(s);
        write_tls(s, b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n");
        thread::sleep(Duration::from_secs(5));
    });
    let (exec, st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let h = http.clone();
    let token = CancellationToken::new();
    let t2 = token.clone();
    let got = run_until(&exec, async move {
        let mut resp = send(&*h, &post(&base), ErrorStyle::OpenAi, &cfg(10_000, 0), &t2).await.unwrap();
        let piece = HttpResponse::chunk(&mut resp).await.unwrap();
        // Cancelled from another thread while the next piece is awaited (the server sends
        // none): the wait ends, and the response with its connection is dropped.
        let t3 = t2.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            t3.cancel();
        });
        let rest = first(HttpResponse::chunk(&mut resp), t2.cancelled()).await;
        drop(resp);
        (first_piece_ok(piece), rest.is_none())
    });
    assert_eq!(got, (true, true));
    assert_eq!(http.idle_connections(), 0);
    assert_quiet(&exec, &st);
}

fn first_piece_ok(p: Option<Bytes>) -> bool {
    p.as_deref() == Some(b"hello".as_slice())
}

#[test]
fn a_stream_dropped_at_its_last_event_keeps_its_connection_when_the_end_has_arrived() {
    // The first response's chunked body comes whole; the second's end is held back.
    let served = Arc::new(AtomicUsize::new(0));
    let (base, accepted) = serve(move |_, mut s| {
        while read_request(&mut s).is_some() {
            s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\n[DONE]\r\n").unwrap();
            if served.fetch_add(1, Ordering::SeqCst) == 1 {
                thread::sleep(Duration::from_millis(300));
            }
            s.write_all(b"0\r\n\r\n").unwrap();
        }
    });
    let (exec, st, _) = new_exec();
    let http = Rc::new(LocalHttp::new(&exec));
    let (h, ex) = (http.clone(), exec.clone());
    let url = format!("{base}/x");
    let idle = run_until(&exec, async move {
        let mut idle = Vec::new();
        for _ in 0..2 {
            let mut resp =
                send(&*h, &post(&url), ErrorStyle::OpenAi, &cfg(10_000, 0), &CancellationToken::new()).await.unwrap();
            // The last event read; the response dropped without reading to the body's end.
            assert_eq!(HttpResponse::chunk(&mut resp).await.unwrap().as_deref(), Some(b"[DONE]".as_slice()));
            // Time for the terminator to arrive (the first response) or not (the second).
            Sleep::new(&ex, Duration::from_millis(50)).await;
            drop(resp);
            idle.push(h.idle_connections());
        }
        idle
    });
    // The first response's connection was pooled and carried the second request; the second,
    // dropped before its end, was closed.
    assert_eq!(idle, vec![1, 0]);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert_quiet(&exec, &st);
}
