//! The JSON request body of `POST /chat/completions`.

use serde::Serialize;

use super::types::{ChatRequest, Message, Role, ToolDefinition};

/// Request shape switches: set from config `compat` flags, or learnt from a server's 400 reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BodyShape {
    /// Omit `stream_options` (server rejects it).
    pub no_stream_usage: bool,
    /// Send the limit as `max_completion_tokens` instead of `max_tokens`.
    pub completion_tokens: bool,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: WireContent<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
}

/// A message's content: a plain string, or content parts when it carries images.
#[derive(Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(String),
    Parts(Vec<WirePart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart<'a> {
    Text { text: String },
    ImageUrl { image_url: WireImageUrl<'a> },
}

#[derive(Serialize)]
struct WireImageUrl<'a> {
    url: &'a str,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

fn wire_message(message: &Message) -> WireMessage<'_> {
    let mut content = message.content.clone();
    if message.role == Role::Assistant
        && let Some(error) = &message.incomplete_error
    {
        content.push_str("\n[Response incomplete: ");
        content.push_str(error);
        content.push(']');
    }
    let tool_calls = if message.role == Role::Assistant {
        message
            .tool_calls
            .iter()
            .map(|call| WireToolCall {
                id: &call.id,
                kind: "function",
                function: WireFunctionCall {
                    name: &call.name,
                    arguments: &call.arguments,
                },
            })
            .collect()
    } else {
        Vec::new()
    };
    let content = if message.images.is_empty() {
        WireContent::Text(content)
    } else {
        let mut parts = Vec::with_capacity(message.images.len() + 1);
        if !content.is_empty() {
            parts.push(WirePart::Text { text: content });
        }
        parts.extend(message.images.iter().map(|url| WirePart::ImageUrl {
            image_url: WireImageUrl { url },
        }));
        WireContent::Parts(parts)
    };
    WireMessage {
        role: message.role.as_str(),
        content,
        tool_call_id: match message.role {
            Role::Tool => message.tool_call_id.as_deref(),
            _ => None,
        },
        tool_calls,
        reasoning_content: match message.role {
            Role::Assistant => message.reasoning.as_deref().filter(|r| !r.is_empty()),
            _ => None,
        },
    }
}

fn wire_tool(tool: &ToolDefinition) -> WireTool<'_> {
    WireTool {
        kind: "function",
        function: WireFunction {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
        },
    }
}

/// Serializes the request body. `max_output_tokens == 0` sends no limit.
pub(crate) fn request_body(
    model: &str,
    request: &ChatRequest,
    max_output_tokens: u32,
    shape: BodyShape,
) -> Result<Vec<u8>, serde_json::Error> {
    let limit = (max_output_tokens > 0).then_some(max_output_tokens);
    let tools: Vec<WireTool<'_>> = request.tools.iter().map(wire_tool).collect();
    let body = WireRequest {
        model,
        messages: request.messages.iter().map(wire_message).collect(),
        stream: true,
        max_tokens: if shape.completion_tokens { None } else { limit },
        max_completion_tokens: if shape.completion_tokens { limit } else { None },
        stream_options: (!shape.no_stream_usage).then_some(StreamOptions {
            include_usage: true,
        }),
        tool_choice: (!tools.is_empty()).then_some("auto"),
        tools,
    };
    serde_json::to_vec(&body)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::types::ToolCall;

    fn body(request: &ChatRequest, limit: u32, shape: BodyShape) -> serde_json::Value {
        let bytes = request_body("m", request, limit, shape).expect("serializes");
        serde_json::from_slice(&bytes).expect("valid json")
    }

    #[test]
    fn full_request_shape() {
        let mut assistant = Message::assistant("I'll look");
        assistant.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: r#"{"path":"a"}"#.into(),
        });
        assistant.reasoning = Some("thinking".into());
        let mut tool = Message::tool_result("c1", "file text");
        tool.reasoning = Some("never sent on tool messages".into());
        let mut cut = Message::assistant("half");
        cut.incomplete_error = Some("model stream interrupted: unexpected EOF".into());
        let request = ChatRequest {
            messages: vec![
                Message::system("sys one"),
                Message::system("sys two"),
                Message::user("hi"),
                assistant,
                tool,
                cut,
            ],
            tools: vec![ToolDefinition {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: json!({"type":"object"}),
            }],
            max_output_tokens: None,
        };
        assert_eq!(
            body(&request, 4096, BodyShape::default()),
            json!({
                "model": "m",
                "messages": [
                    {"role":"system","content":"sys one"},
                    {"role":"system","content":"sys two"},
                    {"role":"user","content":"hi"},
                    {"role":"assistant","content":"I'll look","reasoning_content":"thinking",
                     "tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]},
                    {"role":"tool","content":"file text","tool_call_id":"c1"},
                    {"role":"assistant","content":"half\n[Response incomplete: model stream interrupted: unexpected EOF]"},
                ],
                "stream": true,
                "max_tokens": 4096,
                "stream_options": {"include_usage": true},
                "tools": [{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object"}}}],
                "tool_choice": "auto",
            })
        );
    }

    #[test]
    fn images_become_content_parts() {
        let request = ChatRequest {
            messages: vec![
                Message::user("plain"),
                Message::user_with_images("look:", vec!["data:image/png;base64,AAAA".into()]),
                Message::user_with_images("", vec!["data:image/png;base64,BBBB".into()]),
            ],
            ..ChatRequest::default()
        };
        assert_eq!(
            body(&request, 0, BodyShape::default())["messages"],
            json!([
                {"role":"user","content":"plain"},
                {"role":"user","content":[
                    {"type":"text","text":"look:"},
                    {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},
                ]},
                {"role":"user","content":[
                    {"type":"image_url","image_url":{"url":"data:image/png;base64,BBBB"}},
                ]},
            ])
        );
    }

    #[test]
    fn compat_shapes_and_no_limit() {
        let request = ChatRequest {
            messages: vec![Message::user("hi")],
            ..ChatRequest::default()
        };
        let shaped = body(
            &request,
            100,
            BodyShape {
                no_stream_usage: true,
                completion_tokens: true,
            },
        );
        assert_eq!(
            shaped,
            json!({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"max_completion_tokens":100})
        );
        let unlimited = body(&request, 0, BodyShape::default());
        assert_eq!(
            unlimited,
            json!({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}})
        );
    }
}
