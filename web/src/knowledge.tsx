// What the agent knows and keeps, read-only: memory entries, knowledge bases, artifacts and the
// library. Changing them stays with `gg memory` / `gg kb` / `gg artifact` / `gg library`.
// Everything shown here may come from a model or a file, so it is text, escaped, never HTML.
import { useEffect, useState, type ReactNode } from "react";
import { describeError, rpc } from "./api";
import { Safe } from "./escape";

interface MemoryEntry {
  id: string;
  layer: string;
  path: string;
  line: number;
  text: string;
  marked?: { rule: string; why: string };
}

interface KbInfo {
  name: string;
  files: number;
  chunks: number;
  roots: string[];
  embedModel?: string | null;
  updatedAt: number;
  problem?: string | null;
}

interface Artifact {
  id: string;
  title: string;
  type: string;
  version: number;
  publishedVersion?: number | null;
  updatedAt: string;
}

interface LibraryEntry {
  id: string;
  name: string;
  source: string;
  size: number;
  addedAt: string;
}

/** One method's answer: loading, a value, or why not (e.g. "memory is disabled"). */
type Loaded<T> = { state: "loading" } | { state: "ok"; value: T } | { state: "error"; message: string };

function useMethod<T>(method: string, params: object = {}): Loaded<T> {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: "loading" });
  useEffect(() => {
    rpc<T>(method, params).then(
      (value) => setLoaded({ state: "ok", value }),
      (e) => setLoaded({ state: "error", message: describeError(e) }),
    );
    // Loaded once per view.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [method]);
  return loaded;
}

function Section<T>({
  title,
  loaded,
  testId,
  children,
}: {
  title: string;
  loaded: Loaded<T>;
  testId: string;
  children: (value: T) => ReactNode;
}) {
  return (
    <section className="knowledge-part" aria-label={title} data-testid={testId}>
      <h3>{title}</h3>
      {loaded.state === "loading" && <p className="meta">Loading…</p>}
      {loaded.state === "error" && <p className="meta">{loaded.message}</p>}
      {loaded.state === "ok" && children(loaded.value)}
    </section>
  );
}

function ArtifactContent({ id }: { id: string }) {
  const loaded = useMethod<{ version: number; content: string }>("artifact.get", { artifactId: id });
  if (loaded.state === "loading") return <p className="meta">Loading…</p>;
  if (loaded.state === "error") return <p className="error">{loaded.message}</p>;
  return (
    <pre className="code log" data-testid="artifact-content">
      <Safe text={loaded.value.content} />
    </pre>
  );
}

export function KnowledgeView() {
  const memory = useMethod<{ entries: MemoryEntry[] }>("memory.list");
  const kbs = useMethod<{ knowledgeBases: KbInfo[]; default: string }>("kb.list");
  const artifacts = useMethod<{ artifacts: Artifact[] }>("artifact.list");
  const library = useMethod<{ root: string; entries: LibraryEntry[] }>("library.list");
  const [shown, setShown] = useState<string | null>(null);
  return (
    <section className="knowledge" aria-label="Knowledge">
      <h2>Knowledge</h2>
      <p className="meta">
        Read-only. Change these with <code>gg memory</code>, <code>gg kb</code>, <code>gg artifact</code> and{" "}
        <code>gg library</code>.
      </p>
      <Section title="Memory" loaded={memory} testId="memory">
        {(v) =>
          v.entries.length === 0 ? (
            <p className="empty">No memory entries.</p>
          ) : (
            <ul className="plain">
              {v.entries.map((e) => (
                <li key={e.id} data-testid="memory-entry">
                  <span className="badge normal">{e.layer}</span>{" "}
                  {e.marked && (
                    <span className="badge dangerous" title={e.marked.why}>
                      reads as an instruction
                    </span>
                  )}{" "}
                  <Safe text={e.text} />
                  <span className="meta">
                    {" "}
                    · <Safe text={`${e.path}:${e.line}`} /> · {e.id}
                  </span>
                </li>
              ))}
            </ul>
          )
        }
      </Section>
      <Section title="Knowledge bases" loaded={kbs} testId="kbs">
        {(v) =>
          v.knowledgeBases.length === 0 ? (
            <p className="empty">No knowledge bases (default name: {v.default}).</p>
          ) : (
            <div className="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th>name</th>
                    <th>files</th>
                    <th>chunks</th>
                    <th>embeddings</th>
                    <th>roots</th>
                  </tr>
                </thead>
                <tbody>
                  {v.knowledgeBases.map((k) => (
                    <tr key={k.name}>
                      <td>
                        <Safe text={k.name} />
                        {k.name === v.default && <span className="meta"> (default)</span>}
                        {k.problem && (
                          <p className="error">
                            <Safe text={k.problem} />
                          </p>
                        )}
                      </td>
                      <td>{k.files}</td>
                      <td>{k.chunks}</td>
                      <td>{k.embedModel ? <Safe text={k.embedModel} /> : "keyword only"}</td>
                      <td className="cmd">
                        <code>
                          <Safe text={k.roots.join("\n")} />
                        </code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Section>
      <Section title="Artifacts" loaded={artifacts} testId="artifacts">
        {(v) =>
          v.artifacts.length === 0 ? (
            <p className="empty">No artifacts.</p>
          ) : (
            <ul className="plain">
              {v.artifacts.map((a) => (
                <li key={a.id} data-testid="artifact">
                  <strong>
                    <Safe text={a.title} />
                  </strong>{" "}
                  <span className="meta">
                    {a.type} · v{a.version}
                    {a.publishedVersion ? ` · published v${a.publishedVersion}` : ""} · {a.id}
                  </span>{" "}
                  <button className="link" aria-expanded={shown === a.id} onClick={() => setShown(shown === a.id ? null : a.id)}>
                    {shown === a.id ? "Hide" : "Show source"}
                  </button>
                  {shown === a.id && <ArtifactContent id={a.id} />}
                </li>
              ))}
            </ul>
          )
        }
      </Section>
      <Section title="Library" loaded={library} testId="library">
        {(v) =>
          v.entries.length === 0 ? (
            <p className="empty">The library is empty.</p>
          ) : (
            <ul className="plain">
              {v.entries.map((e) => (
                <li key={e.id} data-testid="library-entry">
                  <Safe text={e.name} />{" "}
                  <span className="meta">
                    {e.size} bytes · from <Safe text={e.source} />
                  </span>
                </li>
              ))}
            </ul>
          )
        }
      </Section>
    </section>
  );
}
