//! `--notify URL`: the events an operator wants pushed rather than found —
//! a kill switch flipped, orders dead-lettered, reconcile drift, a loop
//! stalled on a failing Redis or database and its recovery — posted as one
//! JSON object to each webhook (`docs/guide.md`, "Notifications").
//!
//! The context owns the [`Notifier`], like the report's output path: this is
//! the invocation's second output, for people who are not watching. Delivery
//! never changes what a command does or its exit code: each event is posted
//! in a thread of its own (the command goes on at once), with a
//! [`TIMEOUT`] per attempt and one retry; a failure is a warning on stderr
//! naming the URL, password and query hidden. A command waits for its
//! deliveries in flight when it ends (at most two attempts), so a one-shot
//! `shutdown-switch on` still delivers its event.
//!
//! The HTTP client is hyper 1's (`client::conn::http1`) over tokio, with
//! TLS by tokio-rustls on the rustls (ring) the Redis connections already
//! use, trusting the system's CA store (`SSL_CERT_FILE`/`SSL_CERT_DIR`
//! honoured): all of it already in the dependency tree, so no new HTTP
//! stack is carried for a handful of POSTs a day.
//!
//! May import: domain, redis_client, model, util.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::http::{Request, Uri, header};
use serde::Serialize;

use crate::redis_client::conn::{parse_duration_arg, redact, split_urls};
use crate::util::{identity, output, streak};

/// Longest wait for one delivery attempt: connect, TLS, request and status.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(2);
/// Pause before the one retry of a failed delivery.
const RETRY_AFTER: Duration = Duration::from_millis(250);
/// How often the stall watch looks at the failures being retried.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// The global flags of notifications.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct NotifyArgs {
    /// POST a JSON event to this webhook (http or https; repeat for several) on a kill
    /// switch flip, dead letters, reconcile drift, and a `--loop`/consume stalled on a
    /// failing Redis or database. A failed delivery is a warning; the exit code is unchanged.
    #[arg(
        long,
        global = true,
        env = "SECKILL_NOTIFY",
        value_name = "URL",
        value_parser = Webhooks::parse
    )]
    pub notify: Vec<Webhooks>,

    /// With --notify: tell the webhooks when a long-running command has been retrying a
    /// failing Redis or database this long (and again when it recovers).
    #[arg(long, global = true, env = "SECKILL_NOTIFY_STALL", default_value = "60s",
          value_parser = parse_duration_arg, value_name = "DURATION")]
    pub notify_stall: Duration,
}

/// The webhooks of one `--notify` (or of `SECKILL_NOTIFY`): a comma starts
/// a new URL only before `scheme://`, as in a Redis URL list, so a comma in
/// a query or a password stays in its URL.
#[derive(Debug, Clone)]
pub struct Webhooks(Vec<Webhook>);

impl Webhooks {
    /// clap value parser: one URL, or several separated by commas.
    pub(crate) fn parse(text: &str) -> std::result::Result<Webhooks, String> {
        let hooks = split_urls(text)
            .iter()
            .map(|url| Webhook::parse(url))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        match hooks.is_empty() {
            true => Err("no URL given; e.g. https://hooks.example.com/seckill".into()),
            false => Ok(Webhooks(hooks)),
        }
    }
}

/// One webhook, checked when the flag is read.
#[derive(Clone)]
pub struct Webhook {
    uri: Uri,
    /// `Authorization: Basic …` from the URL's `user:password@`, if any.
    basic: Option<String>,
    /// The URL with its password and query hidden, for warnings.
    shown: String,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Webhook {
    /// clap value parser: an `http://` or `https://` URL with a host.
    pub(crate) fn parse(text: &str) -> std::result::Result<Webhook, String> {
        let shown = redact(text);
        let uri: Uri = text.parse().map_err(|e| {
            format!("{shown} is not a URL ({e}); e.g. https://hooks.example.com/seckill")
        })?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => {
                return Err(format!(
                    "{shown}: only http:// and https:// webhooks are posted to"
                ));
            }
        }
        let authority = uri
            .authority()
            .filter(|a| !a.host().is_empty())
            .ok_or_else(|| format!("{shown} names no host"))?;
        let basic = authority.as_str().rsplit_once('@').map(|(userinfo, _)| {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(userinfo)
        });
        Ok(Webhook { uri, basic, shown })
    }

    fn https(&self) -> bool {
        self.uri.scheme_str() == Some("https")
    }

    /// `host[:port]` without the credentials, as the Host header says it.
    fn host_header(&self) -> String {
        let authority = self.uri.authority().map(|a| a.as_str()).unwrap_or_default();
        authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host)
            .to_string()
    }
}

/// One event, as posted: plain enough that a Slack-compatible receiver
/// shows `text`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Event {
    /// `kill_switch`, `dead_letter`, `reconcile_drift`, `reconcile_unchecked`,
    /// `loop_stalled`, `loop_recovered`.
    pub(crate) event: &'static str,
    pub(crate) campaign: Option<String>,
    /// The item concerned; null for the whole campaign (or several items).
    pub(crate) item: Option<String>,
    /// When it happened, RFC 3339 UTC.
    pub(crate) at: String,
    /// The host the command ran on.
    pub(crate) host: String,
    /// The event's facts, by name.
    pub(crate) detail: serde_json::Value,
    /// One sentence for people.
    pub(crate) text: String,
}

impl Event {
    pub(crate) fn new(
        event: &'static str,
        campaign: &str,
        item: Option<&str>,
        detail: serde_json::Value,
        text: String,
    ) -> Event {
        Event {
            event,
            campaign: Some(campaign.to_string()),
            item: item.map(str::to_string),
            at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            host: identity::host_name(),
            detail,
            text,
        }
    }
}

/// Where events go, and the deliveries still in flight.
#[derive(Default)]
pub(crate) struct Notifier {
    hooks: Arc<Vec<Webhook>>,
    stall_after: Duration,
    in_flight: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("hooks", &self.hooks)
            .field("stall_after", &self.stall_after)
            .finish()
    }
}

impl Notifier {
    pub(crate) fn new(args: NotifyArgs) -> Notifier {
        Notifier {
            hooks: Arc::new(args.notify.into_iter().flat_map(|list| list.0).collect()),
            stall_after: args.notify_stall,
            in_flight: Mutex::new(Vec::new()),
        }
    }

    /// Post `event` to every webhook in the background; nothing when none is given.
    pub(crate) fn send(&self, event: Event) {
        if self.hooks.is_empty() {
            return;
        }
        let handles = deliver_in_background(&self.hooks, &event);
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(handles);
    }

    /// Watch the failures this process is retrying (`util::streak`) until
    /// the guard is dropped: one `loop_stalled` event when one has lasted
    /// `--notify-stall`, one `loop_recovered` when none has any more.
    /// Nothing runs without `--notify`.
    pub(crate) fn watch_stalls(&self, command: &'static str, campaign: &str) -> StallWatch {
        let stop = Arc::new(AtomicBool::new(false));
        if self.hooks.is_empty() {
            return StallWatch { stop, thread: None };
        }
        let (hooks, stall_after, campaign) = (
            Arc::clone(&self.hooks),
            self.stall_after,
            campaign.to_string(),
        );
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("notify-stall".into())
            .spawn(move || watch(&hooks, stall_after, command, &campaign, &flag))
            .ok();
        StallWatch { stop, thread }
    }
}

impl Drop for Notifier {
    /// A command's events are delivered (or warned about) before it exits:
    /// each delivery is bounded by two attempts of [`TIMEOUT`].
    fn drop(&mut self) {
        let handles = std::mem::take(self.in_flight.get_mut().unwrap_or_else(|p| p.into_inner()));
        for handle in handles {
            let _ = handle.join();
        }
    }
}

/// Stops the stall watch when dropped.
pub(crate) struct StallWatch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for StallWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn watch(hooks: &[Webhook], after: Duration, command: &str, campaign: &str, stop: &AtomicBool) {
    // The streak that was said stalled: (when its first failure began, what).
    let mut stalled: Option<(Instant, String)> = None;
    while !stop.load(Ordering::SeqCst) {
        let oldest = streak::oldest().filter(|f| f.since.elapsed() >= after);
        match (&stalled, oldest) {
            (None, Some(failing)) => {
                let failing_for = failing.since.elapsed();
                let detail = serde_json::json!({
                    "command": command,
                    "what": failing.what,
                    "failing_for_ms": failing_for.as_millis() as u64,
                    "attempts": failing.attempts,
                    "last_error": failing.last_error,
                    "threshold_ms": after.as_millis() as u64,
                });
                let text = format!(
                    "seckill {command} on {} has been retrying for {}s ({}: {}); campaign {campaign} is not being served by it",
                    identity::host_name(),
                    failing_for.as_secs(),
                    failing.what,
                    failing.last_error
                );
                let event = Event::new("loop_stalled", campaign, None, detail, text);
                stalled = Some((failing.since, failing.what));
                join(deliver_in_background(hooks, &event));
            }
            (Some((since, what)), None) => {
                let stalled_for = since.elapsed();
                let detail = serde_json::json!({
                    "command": command,
                    "what": what,
                    "stalled_for_ms": stalled_for.as_millis() as u64,
                });
                let text = format!(
                    "seckill {command} on {} recovered after {}s of retrying ({what}); campaign {campaign}",
                    identity::host_name(),
                    stalled_for.as_secs()
                );
                let event = Event::new("loop_recovered", campaign, None, detail, text);
                stalled = None;
                join(deliver_in_background(hooks, &event));
            }
            _ => {}
        }
        std::thread::sleep(WATCH_EVERY);
    }
}

fn join(handles: Vec<JoinHandle<()>>) {
    for handle in handles {
        let _ = handle.join();
    }
}

/// One thread per webhook, so a hook that never answers delays no other.
fn deliver_in_background(hooks: &[Webhook], event: &Event) -> Vec<JoinHandle<()>> {
    let body = match serde_json::to_vec(event) {
        Ok(body) => Bytes::from(body),
        Err(error) => {
            output::say(format!(
                "seckill: warning: --notify: cannot encode the {} event: {error}",
                event.event
            ));
            return Vec::new();
        }
    };
    hooks
        .iter()
        .filter_map(|hook| {
            let (hook, body, name) = (hook.clone(), body.clone(), event.event);
            std::thread::Builder::new()
                .name("notify".into())
                .spawn(move || deliver(&hook, body, name))
                .ok()
        })
        .collect()
}

/// Post one event to one webhook: an attempt, one retry, else a warning.
fn deliver(hook: &Webhook, body: Bytes, event: &str) {
    let first = post(hook, body.clone());
    let Err(first) = first else { return };
    std::thread::sleep(RETRY_AFTER);
    if let Err(second) = post(hook, body) {
        output::say(format!(
            "seckill: warning: --notify {}: the {event} event was not delivered \
             (twice: {first:#}; then {second:#}); the command's outcome is unchanged",
            hook.shown
        ));
    }
}

/// One attempt, within [`TIMEOUT`]; a 2xx answer is delivered.
fn post(hook: &Webhook, body: Bytes) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the HTTP client")?;
    runtime.block_on(async {
        match tokio::time::timeout(TIMEOUT, exchange(hook, body)).await {
            Ok(answer) => answer,
            Err(_) => bail!("no answer within {}s", TIMEOUT.as_secs()),
        }
    })
}

async fn exchange(hook: &Webhook, body: Bytes) -> Result<()> {
    let host = hook.uri.host().unwrap_or_default();
    // `[::1]` in a URL is `::1` to a socket.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let port = hook
        .uri
        .port_u16()
        .unwrap_or(if hook.https() { 443 } else { 80 });
    let tcp = tokio::net::TcpStream::connect((bare, port))
        .await
        .with_context(|| format!("cannot connect to {host}:{port}"))?;
    let _ = tcp.set_nodelay(true);
    let mut request = Request::post(hook.uri.path_and_query().map_or("/", |p| p.as_str()))
        .header(header::HOST, hook.host_header())
        .header(header::CONTENT_TYPE, "application/json")
        .header(
            header::USER_AGENT,
            concat!("seckill/", env!("CARGO_PKG_VERSION")),
        );
    if let Some(basic) = &hook.basic {
        request = request.header(header::AUTHORIZATION, format!("Basic {basic}"));
    }
    let request = request.body(Full::new(body))?;
    let status = if hook.https() {
        let name = rustls::pki_types::ServerName::try_from(bare.to_string())
            .map_err(|e| anyhow!("{host} is not a TLS server name: {e}"))?;
        let tls = tokio_rustls::TlsConnector::from(tls_config()?)
            .connect(name, tcp)
            .await
            .context("TLS handshake failed")?;
        send(hyper_util::rt::TokioIo::new(tls), request).await?
    } else {
        send(hyper_util::rt::TokioIo::new(tcp), request).await?
    };
    if !status.is_success() {
        bail!("answered {status}");
    }
    Ok(())
}

async fn send<I>(io: I, request: Request<Full<Bytes>>) -> Result<hyper::StatusCode>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    let driver = tokio::spawn(connection);
    let response = sender.send_request(request).await?;
    driver.abort();
    Ok(response.status())
}

/// The system's CA store, read once per process.
fn tls_config() -> Result<Arc<rustls::ClientConfig>> {
    static CONFIG: OnceLock<std::result::Result<Arc<rustls::ClientConfig>, String>> =
        OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(
                    "no CA certificate found in the system store (SSL_CERT_FILE, SSL_CERT_DIR)"
                        .into(),
                );
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        })
        .clone()
        .map_err(|e| anyhow!(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhooks_are_checked_and_their_passwords_never_shown() {
        let hook = Webhook::parse("https://ops:s3cret@hooks.example.com:8443/x?token=t").unwrap();
        assert!(hook.https());
        assert_eq!(hook.host_header(), "hooks.example.com:8443");
        assert!(!hook.shown.contains("s3cret") && !hook.shown.contains("token=t"));
        assert_eq!(hook.basic.as_deref(), Some("b3BzOnMzY3JldA=="));
        assert!(
            Webhook::parse("ftp://h/x")
                .unwrap_err()
                .contains("only http")
        );
        assert!(Webhook::parse("not a url").is_err());
        assert!(Webhook::parse("http:///x").is_err());
        let two = Webhooks::parse("http://a/x?k=1,2,https://u:p,w@b/y").unwrap();
        let shown: Vec<&str> = two.0.iter().map(|h| h.shown.as_str()).collect();
        assert_eq!(shown, ["http://a/x?***", "https://u:***@b/y"]);
        assert!(Webhooks::parse(",").is_err());
    }
}
