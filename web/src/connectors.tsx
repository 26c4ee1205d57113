// Settings → Connectors: the Google connector's state, sign-in and revocation (ggd's connect.*).
// The sign-in is gg's own flow: ggd answers the Google URL and serves the loopback redirect; the
// page only opens the URL and follows the status. No token ever reaches the page.
import { useCallback, useEffect, useState } from "react";
import { describeError, rpc } from "./api";

interface GoogleStatus {
  signedIn: boolean;
  configured: boolean;
  toolsEnabled: boolean;
  scopes?: string[];
  signedInAt?: string;
  signIn?: { state: "waiting" | "done" | "failed"; error?: string | null };
}

interface Started {
  url: string;
  scopes: { scope: string; meaning: string }[];
}

export function ConnectorsView() {
  const [google, setGoogle] = useState<GoogleStatus | null>(null);
  const [started, setStarted] = useState<Started | null>(null);
  const [error, setError] = useState("");
  const refresh = useCallback(() => {
    rpc<{ google: GoogleStatus }>("connect.status").then(
      (s) => setGoogle(s.google),
      (e) => setError(describeError(e)),
    );
  }, []);
  useEffect(refresh, [refresh]);
  const waiting = google?.signIn?.state === "waiting";
  // While a sign-in waits for the browser, follow it.
  useEffect(() => {
    if (!waiting) return;
    const timer = window.setInterval(refresh, 1000);
    return () => window.clearInterval(timer);
  }, [waiting, refresh]);
  const signIn = () => {
    setError("");
    rpc<Started>("connect.google.start").then((s) => {
      setStarted(s);
      window.open(s.url, "_blank", "noopener,noreferrer");
      refresh();
    }, (e) => setError(describeError(e)));
  };
  const revoke = () => {
    setError("");
    setStarted(null);
    rpc("connect.revoke", { connector: "google" }).then(refresh, (e) => setError(describeError(e)));
  };
  return (
    <fieldset className="connectors" aria-label="Connectors">
      <legend>Connectors: Google (Gmail, Calendar)</legend>
      {google && !google.configured && (
        <p className="meta">
          No OAuth client configured: set <code>connectors.google.clientId</code> and{" "}
          <code>clientSecretFile</code> in ~/.gg/config.json.
        </p>
      )}
      {google && (
        <p data-testid="google-status">
          {google.signedIn ? `Signed in since ${google.signedInAt ?? "?"}` : "Not signed in"}
          {" · "}
          tools {google.toolsEnabled ? "on" : "off (\"tools\": {\"google\": true} turns them on)"}
        </p>
      )}
      {google?.signedIn && google.scopes && (
        <ul className="meta">
          {google.scopes.map((s) => (
            <li key={s}>
              <code>{s}</code>
            </li>
          ))}
        </ul>
      )}
      {started && waiting && (
        <div>
          <p className="meta">gg asks for these scopes; it never sends mail:</p>
          <ul className="meta">
            {started.scopes.map((s) => (
              <li key={s.scope}>
                <code>{s.scope}</code>: {s.meaning}
              </li>
            ))}
          </ul>
          <p className="meta">
            Waiting for Google. If no tab opened, <a href={started.url} target="_blank" rel="noopener noreferrer">open the sign-in page</a>.
          </p>
        </div>
      )}
      {google?.signIn?.state === "failed" && google.signIn.error && (
        <p className="error" role="alert">
          Sign-in failed: {google.signIn.error}
        </p>
      )}
      <p>
        <button type="button" onClick={signIn} disabled={!google?.configured || waiting}>
          {google?.signedIn ? "Sign in again" : "Sign in to Google"}
        </button>{" "}
        {google?.signedIn && (
          <button type="button" onClick={revoke}>
            Revoke access
          </button>
        )}
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </fieldset>
  );
}
