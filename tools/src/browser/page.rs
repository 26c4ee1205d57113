//! DevTools commands on the page target: attaching to it, reading its URL, evaluating
//! expressions in it, and the readable-text extractor run there. Apart from the tools because
//! they hold no session state: each takes the DevTools connection and the page's session.

use std::time::Duration;

use serde_json::{Value, json};

use super::cdp;

/// How long one DevTools command may take.
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Finds the initial page, attaches to it, and sets the session's rules (downloads refused).
pub(super) async fn attach_page(cdp: &cdp::Cdp) -> Result<String, String> {
    cdp.call(
        "Browser.setDownloadBehavior",
        json!({"behavior": "deny"}),
        None,
        CALL_TIMEOUT,
    )
    .await?;
    let targets = cdp
        .call("Target.getTargets", json!({}), None, CALL_TIMEOUT)
        .await?;
    let existing = targets["targetInfos"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t["type"] == "page"))
        .and_then(|t| t["targetId"].as_str())
        .map(str::to_string);
    let target = match existing {
        Some(t) => t,
        None => cdp
            .call(
                "Target.createTarget",
                json!({"url": "about:blank"}),
                None,
                CALL_TIMEOUT,
            )
            .await?["targetId"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    let attached = cdp
        .call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
            None,
            CALL_TIMEOUT,
        )
        .await?;
    let session = attached["sessionId"]
        .as_str()
        .ok_or("no DevTools session for the page")?
        .to_string();
    cdp.call("Page.enable", json!({}), Some(&session), CALL_TIMEOUT)
        .await?;
    Ok(session)
}

/// The page's URL as the browser records it (not as the page's scripts could report it).
pub(super) async fn current_url(cdp: &cdp::Cdp, page: &str) -> Result<String, String> {
    let h = cdp
        .call(
            "Page.getNavigationHistory",
            json!({}),
            Some(page),
            CALL_TIMEOUT,
        )
        .await?;
    let index = h["currentIndex"].as_u64().unwrap_or(0) as usize;
    Ok(h["entries"][index]["url"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// Evaluates `expression` in the page and returns its value (by value). `user` marks the
/// model's own expression (its exceptions are reported as such).
/// How an error whose rest is page content begins (a page's exception text, which its scripts
/// choose): whoever shows it to the model puts the rest inside the untrusted-content wrapper.
pub const PAGE_THREW: &str = "the page threw: ";

pub(super) async fn evaluate(
    cdp: &cdp::Cdp,
    page: &str,
    expression: &str,
    user: bool,
) -> Result<Value, String> {
    let r = cdp
        .call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true, "userGesture": user}),
            Some(page),
            CALL_TIMEOUT,
        )
        .await?;
    if let Some(ex) = r.get("exceptionDetails") {
        let text = ex["exception"]["description"]
            .as_str()
            .or_else(|| ex["text"].as_str())
            .unwrap_or("exception");
        return Err(format!("{PAGE_THREW}{text}"));
    }
    Ok(r["result"]["value"].clone())
}

/// The readable-text extractor run in the page: the element matching the selector, else the
/// main content (`main`, `article`, `[role=main]`), else the body. Hidden elements (a favourite
/// place for injected instructions) are skipped; links become `[text](href)`; headings `#`.
pub(super) const READ_JS: &str = r#"(sel) => {
  const root = sel ? document.querySelector(sel)
    : (document.querySelector('main, article, [role="main"]') || document.body);
  if (!root) return {error: sel ? 'no element matches ' + sel : 'the page has no body'};
  const BLOCK = new Set(['P','DIV','SECTION','ARTICLE','MAIN','HEADER','FOOTER','NAV','ASIDE','UL','OL','LI','TABLE','TR','BR','H1','H2','H3','H4','H5','H6','PRE','BLOCKQUOTE','FORM','FIGURE','HR','DL','DT','DD','TD','TH']);
  const SKIP = new Set(['SCRIPT','STYLE','NOSCRIPT','TEMPLATE','SVG','CANVAS','IFRAME','HEAD','OBJECT','EMBED']);
  let out = '';
  const nl = () => { if (out && !out.endsWith('\n')) out += '\n'; };
  const walk = (n) => {
    if (n.nodeType === 3) { out += n.nodeValue.replace(/\s+/g, ' '); return; }
    if (n.nodeType !== 1) return;
    const tag = n.tagName.toUpperCase();
    if (SKIP.has(tag)) return;
    if (n.checkVisibility && !n.checkVisibility({opacityProperty: true, visibilityProperty: true})) return;
    if (tag === 'A' && n.href) {
      const t = (n.innerText || '').trim().replace(/\s+/g, ' ');
      if (t) out += '[' + t + '](' + n.href + ')';
      return;
    }
    if (tag === 'IMG') { if (n.alt) out += '[image: ' + n.alt + ']'; return; }
    if (tag === 'PRE') { nl(); out += n.innerText; nl(); return; }
    const block = BLOCK.has(tag);
    if (block) nl();
    if (/^H[1-6]$/.test(tag)) out += '#'.repeat(+tag[1]) + ' ';
    if (tag === 'LI') out += '- ';
    for (const c of n.childNodes) walk(c);
    if (block) nl();
  };
  walk(root);
  return {text: out.replace(/[ \t]+\n/g, '\n').replace(/\n[ \t]+/g, '\n').replace(/\n{3,}/g, '\n\n').trim()};
}"#;
