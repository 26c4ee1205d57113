#!/usr/bin/env node
// A deliberately fragile MCP server (stdio, newline-delimited JSON-RPC) for gg's tests:
//   ok      -> answers "still alive"
//   crash   -> exits in the middle of the call, without answering (saying $GG_TEST_CRASH_SAY, or
//              "crashing on purpose", on stderr)
//   spawn   -> starts a long `sleep` (in the server's process group) and writes its pid to
//              $GG_TEST_PID_FILE, so a test can check that stopping the server stops it too
//   env     -> returns the server's environment as JSON
// With GG_TEST_FAIL_AT=initialize it exits before answering the handshake.
"use strict";
const { spawn } = require("child_process");
const readline = require("readline");

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

const tools = ["ok", "crash", "spawn", "env"].map((name) => ({
  name,
  description: `test tool ${name}`,
  inputSchema: { type: "object", properties: {} },
}));

// With GG_TEST_HOSTILE=1 the list also holds what a careless or hostile server might send:
// duplicate and unsafe names, terminal escapes, an oversized description, an odd schema.
if (process.env.GG_TEST_HOSTILE === "1") {
  tools.push(
    { name: "dup", description: "first", inputSchema: { type: "object" } },
    { name: "dup", description: "second", inputSchema: { type: "object" } },
    {
      name: "weird name/\u00fc\u001b[31m",
      description: "red \u001b[31malert\u001b[0m " + "x".repeat(5000),
      inputSchema: {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        anyOf: [{ $ref: "#/$defs/A" }, { type: "object", properties: { b: { const: 1 } } }],
        $defs: { A: { type: "object", properties: { a: { type: ["string", "null"] } }, required: ["a"] } },
      },
    },
  );
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    return;
  }
  if (msg.id === undefined) return; // notifications
  const reply = (result) => send({ jsonrpc: "2.0", id: msg.id, result });
  switch (msg.method) {
    case "initialize":
      if (process.env.GG_TEST_FAIL_AT === "initialize") {
        process.stderr.write("refusing to initialize\n");
        process.exit(4);
      }
      reply({
        protocolVersion: "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "crashing-server", version: "1.0.0" },
      });
      break;
    case "tools/list":
      reply({ tools });
      break;
    case "tools/call": {
      const name = msg.params && msg.params.name;
      if (name === "crash") {
        // GG_TEST_CRASH_SAY: what the server says on stderr as it dies (a test's hostile text).
        process.stderr.write((process.env.GG_TEST_CRASH_SAY || "crashing on purpose") + "\n");
        process.exit(3);
      } else if (name === "spawn") {
        const child = spawn("sleep", ["1000"], { stdio: "ignore" });
        require("fs").writeFileSync(process.env.GG_TEST_PID_FILE, String(child.pid));
        reply({ content: [{ type: "text", text: `spawned ${child.pid}` }] });
      } else if (name === "env") {
        reply({ content: [{ type: "text", text: JSON.stringify(process.env) }] });
      } else {
        reply({ content: [{ type: "text", text: "still alive" }] });
      }
      break;
    }
    default:
      send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "method not found" } });
  }
});
