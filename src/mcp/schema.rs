//! Input schemas as OpenAI-compatible servers accept them.
//!
//! MCP servers send any JSON Schema; chat-completions servers accept a narrower dialect and
//! reject the whole request over one keyword they do not know. The schema is therefore rebuilt
//! from a list of keywords known to be accepted (an allow-list, so a keyword nobody has seen yet is
//! dropped rather than passed on): local `$ref`s are inlined, `oneOf` becomes `anyOf`, `allOf` is
//! merged, `const` becomes a one-value `enum`, tuple `items` become `anyOf`, arrays always have
//! `items`, and the top level is always `{"type": "object", "properties": {...}}`.
//!
//! Dropping a constraint only loosens what the model is told; the server still validates the
//! arguments it receives.

use serde_json::{Map, Value, json};

/// Nesting (and `$ref` expansion) deeper than this becomes an unconstrained `{}`.
const MAX_DEPTH: usize = 16;
/// Total schema nodes produced; a schema whose `$ref`s multiply beyond this is cut to `{}`.
const MAX_NODES: usize = 10_000;

const TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
/// Keywords copied as they are when their value has the right JSON type.
const NUMERIC: &[&str] = &[
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
];
/// Keywords the top level keeps.
const TOP_LEVEL: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
];

struct Context<'a> {
    root: &'a Map<String, Value>,
    nodes: usize,
}

/// The schema rebuilt for the model's `parameters`.
pub fn normalise(schema: &Value) -> Value {
    let empty = Map::new();
    let root = schema.as_object().unwrap_or(&empty);
    let mut ctx = Context { root, nodes: 0 };
    let mut top = match clean(schema, &mut ctx, 0) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    // A union at the top cannot be a function's parameters: its object branches are merged,
    // each property becoming optional (which branch applies is for the server to check).
    if let Some(Value::Array(branches)) = top.remove("anyOf") {
        for branch in branches {
            if let Value::Object(branch) = branch
                && let Some(Value::Object(props)) = branch.get("properties")
            {
                let target = properties_of(&mut top);
                for (name, schema) in props {
                    target.entry(name.clone()).or_insert_with(|| schema.clone());
                }
            }
        }
    }
    top.retain(|key, _| TOP_LEVEL.contains(&key.as_str()));
    top.insert("type".into(), json!("object"));
    properties_of(&mut top);
    finish_required(&mut top);
    Value::Object(top)
}

fn properties_of(map: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let entry = map
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(props) => props,
        _ => unreachable!("replaced by an object just above"),
    }
}

fn clean(node: &Value, ctx: &mut Context<'_>, depth: usize) -> Value {
    ctx.nodes += 1;
    if depth > MAX_DEPTH || ctx.nodes > MAX_NODES {
        return json!({});
    }
    let Some(map) = node.as_object() else {
        // `true`, or anything that is not a schema at all: unconstrained.
        return json!({});
    };
    if let Some(Value::String(reference)) = map.get("$ref") {
        let mut resolved = match resolve(ctx.root, reference) {
            Some(target) => match clean(&target, ctx, depth + 1) {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            None => Map::new(),
        };
        // Siblings of `$ref` (usually a description) refine the target.
        let mut rest = map.clone();
        rest.remove("$ref");
        if let Value::Object(siblings) = clean(&Value::Object(rest), ctx, depth + 1) {
            for (key, value) in siblings {
                if key == "properties" && value.as_object().is_some_and(Map::is_empty) {
                    continue;
                }
                resolved.insert(key, value);
            }
        }
        return Value::Object(resolved);
    }

    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "type" => {
                if let Some(t) = clean_type(value) {
                    out.insert(key.clone(), t);
                }
            }
            "description" | "title" | "pattern" if value.is_string() => {
                out.insert(key.clone(), value.clone());
            }
            "format" if value.as_str().is_some_and(|f| FORMATS.contains(&f)) => {
                out.insert(key.clone(), value.clone());
            }
            k if NUMERIC.contains(&k) && value.is_number() => {
                out.insert(key.clone(), value.clone());
            }
            "enum" if value.as_array().is_some_and(|a| !a.is_empty()) => {
                out.insert(key.clone(), value.clone());
            }
            "default" => {
                out.insert(key.clone(), value.clone());
            }
            "properties" => {
                let mut props = Map::new();
                if let Some(given) = value.as_object() {
                    for (name, schema) in given {
                        // `false` forbids the property: not offering it says the same.
                        if schema != &Value::Bool(false) {
                            props.insert(name.clone(), clean(schema, ctx, depth + 1));
                        }
                    }
                }
                out.insert(key.clone(), Value::Object(props));
            }
            "required" => {
                if let Some(names) = value.as_array() {
                    let names: Vec<Value> =
                        names.iter().filter(|n| n.is_string()).cloned().collect();
                    out.insert(key.clone(), Value::Array(names));
                }
            }
            "additionalProperties" => match value {
                Value::Bool(_) => {
                    out.insert(key.clone(), value.clone());
                }
                Value::Object(_) => {
                    out.insert(key.clone(), clean(value, ctx, depth + 1));
                }
                _ => {}
            },
            "items" => match value {
                Value::Array(tuple) => {
                    if let Some(items) = union(tuple, ctx, depth) {
                        out.insert(key.clone(), items);
                    }
                }
                other => {
                    out.insert(key.clone(), clean(other, ctx, depth + 1));
                }
            },
            _ => {}
        }
    }
    if !out.contains_key("items")
        && let Some(Value::Array(tuple)) = map.get("prefixItems")
        && let Some(items) = union(tuple, ctx, depth)
    {
        out.insert("items".into(), items);
    }
    if !out.contains_key("enum")
        && let Some(value) = map.get("const")
    {
        out.insert("enum".into(), json!([value]));
    }
    let mut branches = Vec::new();
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = map.get(key) {
            branches.extend(list.iter().map(|b| clean(b, ctx, depth + 1)));
        }
    }
    if !branches.is_empty() {
        out.insert("anyOf".into(), Value::Array(branches));
    }
    if let Some(Value::Array(all)) = map.get("allOf") {
        for branch in all {
            if let Value::Object(branch) = clean(branch, ctx, depth + 1) {
                merge_all_of(&mut out, branch);
            }
        }
    }
    let is = |t: &str| match out.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(list)) => list.iter().any(|x| x == t),
        _ => false,
    };
    if is("array") && !out.contains_key("items") {
        // OpenAI rejects an array schema without `items`.
        out.insert("items".into(), json!({}));
    }
    if out.get("type") == Some(&json!("object")) && !out.contains_key("properties") {
        out.insert("properties".into(), json!({}));
    }
    finish_required(&mut out);
    Value::Object(out)
}

/// A tuple's item schemas as one schema.
fn union(tuple: &[Value], ctx: &mut Context<'_>, depth: usize) -> Option<Value> {
    let mut cleaned: Vec<Value> = tuple.iter().map(|s| clean(s, ctx, depth + 1)).collect();
    match cleaned.len() {
        0 => None,
        1 => cleaned.pop(),
        _ => Some(json!({ "anyOf": cleaned })),
    }
}

fn clean_type(value: &Value) -> Option<Value> {
    match value {
        Value::String(t) if TYPES.contains(&t.as_str()) => Some(value.clone()),
        Value::Array(list) => {
            let mut kept: Vec<&str> = Vec::new();
            for t in list.iter().filter_map(Value::as_str) {
                if TYPES.contains(&t) && !kept.contains(&t) {
                    kept.push(t);
                }
            }
            match kept.len() {
                0 => None,
                1 => Some(json!(kept[0])),
                _ => Some(json!(kept)),
            }
        }
        _ => None,
    }
}

/// `allOf` means every branch applies: properties and `required` are united, any other keyword
/// the node does not set yet is taken from the branch.
fn merge_all_of(out: &mut Map<String, Value>, branch: Map<String, Value>) {
    for (key, value) in branch {
        match (key.as_str(), value) {
            ("properties", Value::Object(props)) => {
                let target = properties_of(out);
                for (name, schema) in props {
                    target.entry(name).or_insert(schema);
                }
            }
            ("required", Value::Array(names)) => {
                let entry = out.entry("required").or_insert_with(|| json!([]));
                if let Value::Array(list) = entry {
                    for name in names {
                        if !list.contains(&name) {
                            list.push(name);
                        }
                    }
                }
            }
            (_, value) => {
                out.entry(key).or_insert(value);
            }
        }
    }
}

/// `required` may only name declared properties, without repeats, and is left out when empty.
fn finish_required(out: &mut Map<String, Value>) {
    let declared: Vec<String> = match out.get("properties") {
        Some(Value::Object(props)) => props.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let mut kept: Vec<Value> = Vec::new();
    if let Some(Value::Array(names)) = out.get("required") {
        for name in names.iter().filter_map(Value::as_str) {
            if declared.iter().any(|d| d == name) && !kept.iter().any(|k| k == name) {
                kept.push(json!(name));
            }
        }
    }
    if kept.is_empty() {
        out.remove("required");
    } else {
        out.insert("required".into(), Value::Array(kept));
    }
}

/// Only references inside the same document are followed (`#`, `#/$defs/…`, `#/definitions/…`,
/// or any other JSON pointer into it); nothing is fetched.
fn resolve(root: &Map<String, Value>, reference: &str) -> Option<Value> {
    let pointer = reference.strip_prefix('#')?;
    let whole = Value::Object(root.clone());
    if pointer.is_empty() {
        return Some(whole);
    }
    whole.pointer(pointer).cloned()
}

/// Every keyword that may appear anywhere in a normalised schema.
pub const ALLOWED_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "title",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "enum",
    "default",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
];

/// Checks what [`normalise`] guarantees (for tests and the fuzz target): an object with
/// `properties` at the top, only [`ALLOWED_KEYWORDS`] anywhere, arrays with `items`, `required`
/// naming only declared properties.
pub fn check_acceptable(schema: &Value) -> Result<(), String> {
    if schema.get("type") != Some(&json!("object"))
        || !schema.get("properties").is_some_and(Value::is_object)
    {
        return Err(format!(
            "top level is not an object with properties: {schema}"
        ));
    }
    for key in schema.as_object().into_iter().flat_map(|m| m.keys()) {
        if !TOP_LEVEL.contains(&key.as_str()) {
            return Err(format!("top-level keyword {key}"));
        }
    }
    check_keywords(schema, "$")
}

fn check_keywords(schema: &Value, path: &str) -> Result<(), String> {
    let Some(map) = schema.as_object() else {
        return Err(format!("{path}: not an object"));
    };
    for (key, value) in map {
        if !ALLOWED_KEYWORDS.contains(&key.as_str()) {
            return Err(format!("{path}: keyword {key}"));
        }
        match key.as_str() {
            "properties" => {
                for (name, sub) in value.as_object().ok_or(format!("{path}: properties"))? {
                    check_keywords(sub, &format!("{path}.{name}"))?;
                }
            }
            "items" => check_keywords(value, &format!("{path}[]"))?,
            "additionalProperties" if value.is_object() => {
                check_keywords(value, &format!("{path}{{}}"))?
            }
            "anyOf" => {
                for (i, sub) in value
                    .as_array()
                    .ok_or(format!("{path}: anyOf"))?
                    .iter()
                    .enumerate()
                {
                    check_keywords(sub, &format!("{path}|{i}"))?;
                }
            }
            "required" => {
                let declared = map.get("properties").and_then(Value::as_object);
                for name in value.as_array().ok_or(format!("{path}: required"))? {
                    let name = name
                        .as_str()
                        .ok_or(format!("{path}: required entry {name}"))?;
                    if !declared.is_some_and(|d| d.contains_key(name)) {
                        return Err(format!("{path}: required {name} is not declared"));
                    }
                }
            }
            _ => {}
        }
    }
    let is_array = match map.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(list)) => list.iter().any(|t| t == "array"),
        _ => false,
    };
    if is_array && !map.contains_key("items") {
        return Err(format!("{path}: array without items"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn table() {
        let cases = [
            (json!({}), json!({"type": "object", "properties": {}})),
            (
                json!("nonsense"),
                json!({"type": "object", "properties": {}}),
            ),
            (
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                       "properties": {"a": {"type": "string", "examples": ["x"]}}, "required": ["a", "ghost", "a"]}),
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
            ),
            (
                json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/P", "description": "the p"}},
                       "$defs": {"P": {"type": "object", "properties": {"x": {"const": 3}}}}}),
                json!({"type": "object", "properties": {"p": {"type": "object", "description": "the p",
                       "properties": {"x": {"enum": [3]}}}}}),
            ),
            (
                json!({"properties": {"v": {"oneOf": [{"type": "string"}, {"type": "array", "prefixItems": [{"type": "integer"}]}]}}}),
                json!({"type": "object", "properties": {"v": {"anyOf": [{"type": "string"},
                       {"type": "array", "items": {"type": "integer"}}]}}}),
            ),
            (
                json!({"allOf": [{"properties": {"a": {"type": "integer", "exclusiveMinimum": 0}}, "required": ["a"]},
                                 {"properties": {"b": {"type": ["string", "null", "string", "bogus"], "format": "uri-reference"}}}]}),
                json!({"type": "object", "properties": {"a": {"type": "integer"},
                       "b": {"type": ["string", "null"]}}, "required": ["a"]}),
            ),
            (
                json!({"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                                 {"type": "object", "properties": {"b": {"type": "number"}}}]}),
                json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}}),
            ),
            (
                json!({"type": "object", "properties": {"gone": false, "any": true, "list": {"type": "array"}},
                       "additionalProperties": false}),
                json!({"type": "object", "properties": {"any": {}, "list": {"type": "array", "items": {}}},
                       "additionalProperties": false}),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(normalise(&input), want, "input: {input}");
        }
    }

    #[test]
    fn recursive_references_end() {
        let schema = json!({"type": "object", "properties": {"node": {"$ref": "#/$defs/N"}},
            "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}, "again": {"$ref": "#"}}}}});
        let out = normalise(&schema);
        check_acceptable(&out).unwrap();
        assert!(!out.to_string().contains("$ref"));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let keys = prop_oneof![
            Just("type".to_string()),
            Just("properties".to_string()),
            Just("items".to_string()),
            Just("required".to_string()),
            Just("anyOf".to_string()),
            Just("oneOf".to_string()),
            Just("allOf".to_string()),
            Just("$ref".to_string()),
            Just("$defs".to_string()),
            Just("const".to_string()),
            Just("enum".to_string()),
            Just("prefixItems".to_string()),
            Just("additionalProperties".to_string()),
            Just("format".to_string()),
            "[a-z$]{1,6}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            prop_oneof![
                Just("object"),
                Just("array"),
                Just("string"),
                Just("#/$defs/a"),
                Just("#"),
                Just("a")
            ]
            .prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(keys.clone(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_input_becomes_an_acceptable_schema(input in arb_json()) {
            let out = normalise(&input);
            prop_assert!(check_acceptable(&out).is_ok(), "{:?} for {}", check_acceptable(&out), input);
            prop_assert_eq!(normalise(&out), out.clone(), "not idempotent for {}", input);
        }
    }
}
