//! Media files on disk: outputs saved under `~/.gg/media` (0700 directories, 0600 files, no
//! symlink anywhere on the way) or at a path a person gave (`--out`), and the audio a
//! transcription reads, under the same confinement and deny-read rules as the file tools.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use super::{AudioUpload, MAX_UPLOAD_BYTES, MediaError};
use tools::paths::{DenyRead, PathError, Workspace};

/// Saves `bytes` as a new file `<stamp>-<random>.<ext>` in `<home>/.gg/media/<kind>`, creating
/// the directories 0700 one at a time without following a symlink, and the file 0600 with
/// `O_EXCL|O_NOFOLLOW`. Returns its path.
pub fn save_in_media(home: &Path, kind: &str, ext: &str, bytes: &[u8]) -> Result<PathBuf, String> {
    let root = Workspace::open(home).map_err(|e| format!("{}: {e}", home.display()))?;
    let relative = format!(".gg/media/{kind}");
    let confined = root.confine(&relative).map_err(|e| e.to_string())?;
    let dir = root
        .open_dir_strict(&confined, Some(0o700))
        .map_err(|e| match e {
            PathError::Outside(_) => format!(
                "~/{relative}: a symlink on the way; gg writes media only through real directories"
            ),
            other => other.to_string(),
        })?
        .ok_or_else(|| format!("~/{relative}: could not be created"))?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S");
    let name = format!("{stamp}-{:08x}.{ext}", fastrand::u32(..));
    let fd = rustix::fs::openat(
        dir.as_fd(),
        name.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| format!("~/{relative}/{name}: {e}"))?;
    let mut file = File::from(fd);
    let path = root.root().join(&relative).join(&name);
    if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        let _ = rustix::fs::unlinkat(dir.as_fd(), name.as_str(), rustix::fs::AtFlags::empty());
        return Err(format!("{}: {e}", path.display()));
    }
    Ok(path)
}

/// Writes `bytes` to `out`, a path a person named (`--out`): created 0600 and never through a
/// symlink at the last component. An existing file is refused unless `overwrite`, and then
/// replaced atomically (a temporary file beside it, renamed over it).
pub fn write_out(out: &Path, bytes: &[u8], overwrite: bool) -> Result<(), String> {
    let shown = out.display();
    let name = out
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("--out {shown}: not a file name"))?;
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match std::fs::symlink_metadata(out) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(format!(
                "--out {shown}: is a symlink; gg does not write through one"
            ));
        }
        Ok(meta) if !meta.is_file() => return Err(format!("--out {shown}: not a regular file")),
        Ok(_) if !overwrite => {
            return Err(format!(
                "--out {shown}: exists (pass --force to replace it)"
            ));
        }
        Ok(_) => {
            return tools::store::write_atomic(&dir, name, bytes, "media")
                .map_err(|e| format!("--out {shown}: {e}"));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("--out {shown}: {e}")),
    }
    tools::store::create_new(&dir, name, bytes, "media").map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            format!("--out {shown}: exists (pass --force to replace it)")
        }
        _ => format!("--out {shown}: {e}"),
    })
}

/// An audio file opened for a transcription and checked (a regular file, at most
/// [`MAX_UPLOAD_BYTES`], an extension the endpoint takes); read when the call runs.
#[derive(Debug)]
pub struct OpenedAudio {
    file: File,
    /// The path as given, for messages.
    pub shown: String,
    pub file_name: String,
    pub size: u64,
}

impl OpenedAudio {
    fn new(file: File, shown: &str) -> Result<OpenedAudio, MediaError> {
        let size = file
            .metadata()
            .map_err(|e| MediaError::invalid(format!("{shown}: {e}")))?
            .len();
        let file_name = Path::new(shown)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("audio")
            .to_string();
        super::formats::transcription_content_type(&file_name).map_err(MediaError::invalid)?;
        check_upload_size(shown, size)?;
        Ok(OpenedAudio {
            file,
            shown: shown.to_string(),
            file_name,
            size,
        })
    }

    /// Reads the file (no more than the limit, whatever its size said when it was opened).
    pub fn read(mut self) -> Result<AudioUpload, MediaError> {
        let mut bytes = Vec::with_capacity(usize::try_from(self.size).unwrap_or(0));
        (&mut self.file)
            .take(MAX_UPLOAD_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| MediaError::invalid(format!("{}: {e}", self.shown)))?;
        check_upload_size(&self.shown, bytes.len() as u64)?;
        Ok(AudioUpload {
            file_name: self.file_name,
            bytes,
        })
    }
}

/// The endpoint's 25 MB limit, said before anything is sent.
pub fn check_upload_size(shown: &str, size: u64) -> Result<(), MediaError> {
    if size > MAX_UPLOAD_BYTES {
        return Err(MediaError::invalid(format!(
            "{shown} is {}; the transcription endpoint takes at most {}",
            tools::store::human_size(size),
            tools::store::human_size(MAX_UPLOAD_BYTES)
        )));
    }
    Ok(())
}

/// Opens the audio a tool call or a ggd client names, as the file tools would: inside `cwd`
/// (through no symlink leading out, the sandbox's deny-read paths refused where the file really
/// is), or under `~/.gg/media` where the speech gg made is kept (through no symlink at all).
pub fn open_confined(cwd: &Path, home: &Path, user_path: &str) -> Result<OpenedAudio, MediaError> {
    let invalid = |e: PathError| MediaError::invalid(e.to_string());
    let media = super::config::media_dir(home);
    let media_real = std::fs::canonicalize(&media).unwrap_or_else(|_| media.clone());
    let path = Path::new(user_path);
    let in_media = [&media, &media_real]
        .into_iter()
        .find_map(|root| path.strip_prefix(root).ok());
    if let Some(relative) = in_media {
        let root = Workspace::open(&media_real)
            .map_err(|e| MediaError::invalid(format!("{user_path}: {e}")))?;
        let relative = relative
            .to_str()
            .ok_or_else(|| MediaError::invalid(format!("{user_path}: not valid UTF-8")))?;
        let confined = root.confine(relative).map_err(invalid)?;
        let file = root
            .open_read_strict(&confined)
            .map_err(|e| match e {
                PathError::Outside(_) => MediaError::invalid(format!(
                    "{user_path}: a symlink on the way; files under ~/.gg/media are read only \
                     through real directories"
                )),
                other => invalid(other),
            })?
            .ok_or_else(|| MediaError::invalid(format!("{user_path}: no such file")))?;
        return OpenedAudio::new(file, user_path);
    }
    let mut root =
        Workspace::open(cwd).map_err(|e| MediaError::invalid(format!("{}: {e}", cwd.display())))?;
    root.set_hidden(
        DenyRead::for_root(root.root()).map_err(|e| MediaError::invalid(e.to_string()))?,
    );
    let confined = root.confine(user_path).map_err(invalid)?;
    let file = root.open_read(&confined).map_err(invalid)?;
    OpenedAudio::new(file, user_path)
}

/// Opens a file a person named on the command line: any readable regular file, except one that
/// really lies in a deny-read path (`~/.ssh`, gg's credentials, …), which no actor of gg reads.
pub fn open_named(path: &Path) -> Result<OpenedAudio, MediaError> {
    let shown = path.display().to_string();
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| MediaError::invalid(format!("{shown}: {}", std::io::Error::from(e))))?;
    let file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| MediaError::invalid(format!("{shown}: {e}")))?;
    if !meta.is_file() {
        return Err(MediaError::invalid(format!("{shown}: not a regular file")));
    }
    // Where the opened file really is, and whether it is a hard link to a secret.
    if DenyRead::everywhere().covers_open(&file) {
        return Err(MediaError::invalid(
            PathError::Hidden(shown.clone()).to_string(),
        ));
    }
    OpenedAudio::new(file, &shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn media_files_are_private_and_never_written_through_a_symlink() {
        let home = tempfile::tempdir().unwrap();
        let path = save_in_media(home.path(), "speech", "wav", b"RIFF").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"RIFF");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let dir = home.path().join(".gg/media/speech");
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );

        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), home.path().join(".gg/media/images")).unwrap();
        let err = save_in_media(home.path(), "images", "png", b"x").unwrap_err();
        assert!(err.contains("symlink"), "{err}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn out_files_are_created_private_and_existing_ones_only_with_force() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a.wav");
        write_out(&out, b"one", false).unwrap();
        assert_eq!(
            std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(
            write_out(&out, b"two", false)
                .unwrap_err()
                .contains("--force")
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"one");
        write_out(&out, b"two", true).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"two");
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = dir.path().join("link.wav");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(
            write_out(&link, b"x", true)
                .unwrap_err()
                .contains("symlink")
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }
}
