import { createRoot } from "react-dom/client";
import { adoptTokenFromLocation } from "./api";
import { App } from "./App";
import "./styles.css";

// First thing: move the token from the address bar into memory and clear it from the URL.
const authorized = adoptTokenFromLocation();
const root = document.getElementById("root");
if (root) createRoot(root).render(<App authorized={authorized} />);
