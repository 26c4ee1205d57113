import { describe, expect, it } from "vitest";
import { describeSettings, parseDomains, runParams, type RunSettings } from "../src/settings";
import { hasSavedLog } from "../src/transcript";

const base: RunSettings = { requireApproval: true, sandbox: null, network: null, allowDomains: [] };

describe("run settings", () => {
  it("send the network policy only with the sandbox", () => {
    expect(runParams(base)).toEqual({ requireApproval: true, sandbox: null });
    const allow: RunSettings = { ...base, sandbox: true, network: "allow-list", allowDomains: ["example.org"] };
    expect(runParams(allow)).toEqual({
      requireApproval: true,
      sandbox: true,
      network: "allow-list",
      allowDomains: ["example.org"],
    });
    // Hosts belong to the allow-list only.
    expect(runParams({ ...allow, network: "off" })).toEqual({ requireApproval: true, sandbox: true, network: "off" });
    // Sandbox off: nothing could enforce a policy, so none is sent.
    expect(runParams({ ...allow, sandbox: false })).toEqual({ requireApproval: true, sandbox: false });
  });

  it("read hosts as a person types them", () => {
    expect(parseDomains(" example.org,  *.b.example\nc.example ,")).toEqual(["example.org", "*.b.example", "c.example"]);
    expect(parseDomains("  ")).toEqual([]);
  });

  it("say what a new run gets", () => {
    expect(describeSettings(base)).toBe("asks here · sandbox: default");
    expect(describeSettings({ ...base, requireApproval: false, sandbox: true, network: "allow-list", allowDomains: ["a.example"] })).toBe(
      "never asks · sandbox on · network allow-list +a.example",
    );
    expect(describeSettings({ ...base, sandbox: false, network: "off" })).toBe("asks here · sandbox off");
  });
});

describe("hasSavedLog", () => {
  it("recognises only the bash tool's truncation header", () => {
    expect(
      hasSavedLog("... output truncated: omitted 9 bytes; showing last 1 bytes ...\nFull output saved to: /w/.gg/outputs/bash-1-0123abcd.log\n9"),
    ).toBe(true);
    expect(hasSavedLog("Full output saved to: /etc/passwd\n")).toBe(false);
    expect(hasSavedLog("... output truncated: omitted 9 bytes\nFull output could not be saved.\n")).toBe(false);
    expect(hasSavedLog(undefined)).toBe(false);
  });
});
