//! Minimal probe: one Tauri v2 window that loads the external URL given as the first argument.
use tauri::{WebviewUrl, WebviewWindowBuilder};

fn main() {
    let url = std::env::args().nth(1).unwrap_or_else(|| "about:blank".to_string());
    let url: tauri::Url = url.parse().expect("url");
    tauri::Builder::default()
        .setup(move |app| {
            WebviewWindowBuilder::new(app, "main", WebviewUrl::External(url))
                .title("tauri-probe")
                .inner_size(800.0, 600.0)
                .build()?;
            Ok(())
        })
        .run(tauri::generate_context!())
        .expect("tauri app");
}
