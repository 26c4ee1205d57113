import { useEffect, useState } from "react";
import { describeError, rpc } from "./api";
import { Safe } from "./escape";

interface McpServer {
  name: string;
  tools: { name: string; description: string }[];
}

export function McpView() {
  const [servers, setServers] = useState<McpServer[] | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    rpc<{ servers: McpServer[] }>("mcp.list").then((r) => setServers(r.servers), (e) => setError(describeError(e)));
  }, []);
  return (
    <section aria-label="MCP servers">
      <h2>MCP servers</h2>
      {error && <p className="error" role="alert">{error}</p>}
      {servers && servers.length === 0 && <p className="empty">No MCP servers are connected to ggd.</p>}
      {servers?.map((s) => (
        <article key={s.name} className="card">
          <h3>
            <Safe text={s.name} />
          </h3>
          <ul>
            {s.tools.map((t) => (
              <li key={t.name}>
                <code>
                  <Safe text={t.name} />
                </code>{" "}
                <Safe text={t.description} />
              </li>
            ))}
          </ul>
        </article>
      ))}
    </section>
  );
}
