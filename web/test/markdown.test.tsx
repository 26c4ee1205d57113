import { describe, expect, it } from "vitest";
import { renderToStaticMarkup } from "react-dom/server";
import { Markdown } from "../src/markdown";

describe("Markdown", () => {
  it("renders code, emphasis and links, never raw HTML", () => {
    const html = renderToStaticMarkup(
      <Markdown text={"# Title\n\nSome **bold** and `code` <img src=x onerror=alert(1)>\n\n```sh\nrm -rf /tmp/x\n```\n- [a](https://example.com)\n- [b](javascript:alert(1))"} />,
    );
    expect(html).toContain("<strong>bold</strong>");
    expect(html).toContain("<code>code</code>");
    expect(html).toContain('<pre class="code" data-lang="sh"><code>rm -rf /tmp/x</code></pre>');
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(html).not.toContain("<img");
    expect(html).toContain('href="https://example.com"');
    expect(html).not.toContain('href="javascript:');
  });
  it("always advances on lines that look like block starts", () => {
    const html = renderToStaticMarkup(<Markdown text={"  # not a heading\n  > nor a quote"} />);
    expect(html).toContain("not a heading");
  });
});
