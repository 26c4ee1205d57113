//! Every rule id the classifier can report, in one place: a typo is a compile error and
//! the list of ids is greppable. The ids themselves are stable (they appear in JSON output,
//! audit logs and policy tests).

macro_rules! rule_ids {
    ($($(#[$doc:meta])* $name:ident = $id:literal,)*) => {
        /// A rule id. [`RuleId::as_str`] is the stable text shown to people and tools.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum RuleId {
            $($(#[$doc])* $name,)*
        }

        impl RuleId {
            /// The stable dotted id, e.g. `rm.recursive-force-root`.
            pub(crate) const fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$name => $id,)*
                }
            }
        }
    };
}

rule_ids! {
    DecodePipeToInterpreter = "decode.pipe-to-interpreter",
    DiskDdDevice = "disk.dd-device",
    DiskFormat = "disk.format",
    DiskMount = "disk.mount",
    DiskShredDevice = "disk.shred-device",
    DiskWriteDevice = "disk.write-device",
    DownloadExecSubstitution = "download.exec-substitution",
    DownloadPipeToInterpreter = "download.pipe-to-interpreter",
    DownloadThenExecute = "download.then-execute",
    DynamicCommandName = "dynamic.command-name",
    DynamicCommandNameDangerousArgs = "dynamic.command-name-dangerous-args",
    DynamicCommandNameUntrusted = "dynamic.command-name-untrusted",
    DynamicShellCode = "dynamic.shell-code",
    EnvProgramOverride = "env.program-override",
    ExecAlias = "exec.alias",
    ExecEditorShell = "exec.editor-shell",
    ExecEmbeddedShell = "exec.embedded-shell",
    ExecFindExecShell = "exec.find-exec-shell",
    ExecInteractiveShell = "exec.interactive-shell",
    ExecInterpreterCode = "exec.interpreter-code",
    ExecManProgram = "exec.man-program",
    ExecProgramOverride = "exec.program-override",
    ExecRgPre = "exec.rg-pre",
    ExecScriptFile = "exec.script-file",
    ExecSortCompressProgram = "exec.sort-compress-program",
    ExecStdinCode = "exec.stdin-code",
    ExecTarProgram = "exec.tar-program",
    ExecWrapper = "exec.wrapper",
    ExfilCredentials = "exfil.credentials",
    FindDeleteOutside = "find.delete-outside",
    GitBranchChange = "git.branch-change",
    GitConfigOverride = "git.config-override",
    GitConfigOverrideProgram = "git.config-override-program",
    GitConfigProgramKey = "git.config-program-key",
    GitConfigWrite = "git.config-write",
    GitExecPath = "git.exec-path",
    GitOtherRepository = "git.other-repository",
    GitPaginate = "git.paginate",
    GitPush = "git.push",
    GitPushForce = "git.push-force",
    GitRemoteChange = "git.remote-change",
    GitRepoConfigRunsPrograms = "git.repo-config-runs-programs",
    NetworkConnection = "network.connection",
    NetworkDevTcp = "network.dev-tcp",
    NetworkDownload = "network.download",
    NetworkRemoteCommand = "network.remote-command",
    NetworkRemoteCopy = "network.remote-copy",
    NetworkReverseShell = "network.reverse-shell",
    ObfuscationInvisibleCharacters = "obfuscation.invisible-characters",
    ParseError = "parse.error",
    ParseTooComplex = "parse.too-complex",
    ParseTooDeep = "parse.too-deep",
    PolicyDangerousPrefix = "policy.dangerous-prefix",
    PrivilegeSetcap = "privilege.setcap",
    PrivilegeSudo = "privilege.sudo",
    PrivilegeDoas = "privilege.doas",
    PrivilegePkexec = "privilege.pkexec",
    PrivilegeRun0 = "privilege.run0",
    PrivilegeNsenter = "privilege.nsenter",
    PrivilegeChroot = "privilege.chroot",
    PrivilegeSetuid = "privilege.setuid",
    PrivilegeSu = "privilege.su",
    PrivilegeSudoedit = "privilege.sudoedit",
    PrivilegeWrapper = "privilege.wrapper",
    ReadonlyAwkIo = "readonly.awk-io",
    ReadonlyDynamicArgument = "readonly.dynamic-argument",
    ReadonlyFindExec = "readonly.find-exec",
    ReadonlyFlagWrites = "readonly.flag-writes",
    ReadonlyNotAllowListed = "readonly.not-allow-listed",
    ReadonlyRedirectWrite = "readonly.redirect-write",
    ReadonlySedScript = "readonly.sed-script",
    RmRecursiveForceHome = "rm.recursive-force-home",
    RmRecursiveForceObfuscated = "rm.recursive-force-obfuscated",
    RmRecursiveForceOutside = "rm.recursive-force-outside",
    RmRecursiveForceRoot = "rm.recursive-force-root",
    RmUnknownTarget = "rm.unknown-target",
    SecretsCredentialFile = "secrets.credential-file",
    SystemClock = "system.clock",
    SystemFirewall = "system.firewall",
    SystemForkBomb = "system.fork-bomb",
    SystemHostSettings = "system.host-settings",
    SystemHostname = "system.hostname",
    SystemKernel = "system.kernel",
    SystemKillAll = "system.kill-all",
    SystemPackageManager = "system.package-manager",
    SystemScheduledJob = "system.scheduled-job",
    SystemServiceChange = "system.service-change",
    SystemShutdown = "system.shutdown",
    SystemUserAccount = "system.user-account",
    SystemUserConfig = "system.user-config",
    WriteOutsideCwd = "write.outside-cwd",
    WriteUnknownTarget = "write.unknown-target",
    WriteProtected = "write.protected",
    RmProject = "rm.project",
    GitGrepPager = "git.grep-pager",
    GitDestructive = "git.destructive",
    GitStashChange = "git.stash-change",
    GitTagChange = "git.tag-change",
}
