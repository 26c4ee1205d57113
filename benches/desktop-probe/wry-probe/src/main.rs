//! Minimal probe: one tao window with a wry webview (built into GTK's vbox, as gg-desktop does)
//! that loads the URL given as the first argument.
use tao::event::{Event, WindowEvent};
use tao::event_loop::{ControlFlow, EventLoop};
use tao::platform::unix::WindowExtUnix;
use tao::window::WindowBuilder;
use wry::{WebViewBuilder, WebViewBuilderExtUnix};

fn main() {
    let url = std::env::args().nth(1).unwrap_or_else(|| "about:blank".to_string());
    let event_loop = EventLoop::new();
    let window = WindowBuilder::new()
        .with_title("wry-probe")
        .with_inner_size(tao::dpi::LogicalSize::new(800.0, 600.0))
        .build(&event_loop)
        .expect("window");
    let vbox = window.default_vbox().expect("vbox");
    let _webview = WebViewBuilder::new()
        .with_url(url)
        .build_gtk(vbox)
        .expect("webview");
    event_loop.run(move |event, _, control_flow| {
        *control_flow = ControlFlow::Wait;
        if let Event::WindowEvent { event: WindowEvent::CloseRequested, .. } = event {
            *control_flow = ControlFlow::Exit;
        }
    });
}
