import { createRoot } from "react-dom/client";
import { adoptTokenFromLocation, setToken } from "./api";
import { App } from "./App";
import { askShell, inShell, sendLinksToBrowser, type ShellSession } from "./shell";
import "./styles.css";

async function start(): Promise<void> {
  let authorized = false;
  let shell: ShellSession | null = null;
  if (inShell()) {
    // In gg-desktop the token comes from the shell, into memory only.
    try {
      shell = await askShell<ShellSession>("session");
      setToken(shell.token);
      authorized = true;
      sendLinksToBrowser();
    } catch {
      authorized = false;
    }
  } else {
    // First thing: move the token from the address bar into memory and clear it from the URL.
    authorized = adoptTokenFromLocation();
  }
  const root = document.getElementById("root");
  if (root) createRoot(root).render(<App authorized={authorized} shell={shell} />);
}

void start();
