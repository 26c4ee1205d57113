//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout.
//!
//! Every line is handled in its own task, so a blocking `run.wait` never holds up a
//! `run.approve`; one writer task serialises the responses, one per line.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::handler::Handler;
use super::rpc::{Frame, LineFramer, error_without_id, oversized_error};

/// Serves until `input` ends (or fails) or `stop` is cancelled. Responses still being computed
/// when input ends are abandoned; the caller then shuts the runtime down.
pub async fn serve<R, W>(handler: Arc<Handler>, mut input: R, output: W, stop: CancellationToken)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (responses, mut outbox) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(response) = outbox.recv().await {
            let mut line = response.into_bytes();
            line.push(b'\n');
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                // The client went away; nobody reads responses any more.
                break;
            }
        }
    });
    let mut framer = LineFramer::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = tokio::select! {
            read = input.read(&mut buffer) => read,
            () = stop.cancelled() => break,
        };
        let frames = match read {
            Ok(0) | Err(_) => framer.finish().into_iter().collect(),
            Ok(n) => framer.push(&buffer[..n]),
        };
        for frame in frames {
            match frame {
                Frame::Oversized => {
                    let _ = responses.send(error_without_id(&oversized_error()).to_string());
                }
                Frame::Line(line) => {
                    let handler = Arc::clone(&handler);
                    let responses = responses.clone();
                    tokio::spawn(async move {
                        if let Some(response) = handler.handle_message(&line).await {
                            let _ = responses.send(response.text);
                        }
                    });
                }
            }
        }
        if matches!(read, Ok(0) | Err(_)) {
            break;
        }
    }
    // Requests already answered are flushed; waits still blocked are abandoned.
    drop(responses);
    let _ = tokio::time::timeout(std::time::Duration::from_millis(300), writer).await;
}
