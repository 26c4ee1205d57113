import { defineConfig } from "vite";

// Fixed file names (no content hashes) and no inline scripts: ggd embeds exactly these files
// and serves them under a CSP without 'unsafe-inline'. The output must be byte-for-byte
// reproducible, because CI rebuilds it and compares with the committed copy.
export default defineConfig({
  base: "/",
  oxc: { jsx: { runtime: "automatic" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    modulePreload: false,
    cssCodeSplit: false,
    assetsInlineLimit: 0,
    sourcemap: false,
    rollupOptions: {
      output: {
        entryFileNames: "assets/app.js",
        chunkFileNames: "assets/[name].js",
        assetFileNames: "assets/[name][extname]",
        codeSplitting: false,
      },
    },
  },
});
