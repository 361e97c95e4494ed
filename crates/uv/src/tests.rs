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
fn read_request(s: &mut TcpStream) -> Option<String> {
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
fn assert_quiet(exec: &Exec<PollReactor>, st: &RefCell<crate::test_reactor::State>) {
    let st = st.borrow();
    assert_eq!(st.counts.watches_opened, st.counts.watches_closed, "{:?}", st.counts);
    assert_eq!(st.timers_running(), 0);
    assert_eq!(exec.live_tasks(), 0);
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
    let http = Rc::new(LocalHttp::new(&exec));
    let h = http.clone();
    let url = format!("{base}/v1/chat?x=1");
    let bodies = run_until(&exec, async move {
        let mut out = Vec::new();
        for _ in 0..3 {
            out.push(call(&h, &post(&url), &cfg(10_000, 0), &CancellationToken::new()).await);
        }
        out
    });
    assert_eq!(bodies, vec![Ok("{\"n\":1}".to_string()), Ok("{\"n\":2}".into()), Ok("{\"n\":3}".into())]);
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
    drop(http);
    drop(exec);
    let c = st.borrow().counts;
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

#[test]
fn a_request_times_out_on_the_loops_timer() {
    let (base, _) = serve(|_, mut s| {
        read_request(&mut s);
        thread::sleep(Duration::from_secs(5));
    });
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
    let (base, accepted) = serve(|_, mut s| {
        read_request(&mut s);
        thread::sleep(Duration::from_secs(5));
    });
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
    drop(http);
    drop(exec);
    let c = st.borrow().counts;
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
