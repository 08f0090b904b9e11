//! `procward-supervise <exit-file> <program> [args...]`
//!
//! At start it records its own identity in `supervisor.json` beside the exit file.
//! The parent of a durable job. It runs `<program> [args...]` (the job: `sh -c <command>`),
//! waits for it, and writes the job's exact end — exit code or terminating signal — to
//! `<exit-file>` atomically (temp file, fsync, rename, fsync of the directory). A shell
//! wrapper cannot do this: `$?` is 128+N for both "killed by signal N" and `exit 128+N`.
//!
//! It ignores SIGHUP, SIGINT, SIGTERM and SIGPIPE so that the host's exit and the SIGTERM
//! of a tree kill (which reaches the whole process group) leave it alive to record how
//! the job ended; the job itself gets default dispositions back. A SIGKILL of the group
//! ends it too, and then no exit file is written (the killer knows what it did).

#[cfg(not(unix))]
fn main() {
  eprintln!("procward-supervise: durable jobs are not supported on this platform yet");
  std::process::exit(70);
}

#[cfg(unix)]
fn main() {
  unix::main()
}

#[cfg(unix)]
mod unix {
  use procward_core::status::ExitInfo;
  use std::io::Write;
  use std::os::unix::fs::OpenOptionsExt;
  use std::os::unix::process::CommandExt;
  use std::path::{Path, PathBuf};
  use std::process::Command;

  fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = PathBuf::from(path);
    tmp.set_extension(format!("tmp{}", std::process::id()));
    {
      let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
      f.write_all(text.as_bytes())?;
      f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
  }

  /// Reaps every child (the job and adopted orphans) until the job itself has ended.
  fn wait_for(job: libc::pid_t) -> ExitInfo {
    loop {
      let mut status = 0;
      let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
      if pid == job {
        return if libc::WIFSIGNALED(status) {
          ExitInfo::signalled(libc::WTERMSIG(status))
        } else {
          ExitInfo::exited(libc::WEXITSTATUS(status))
        };
      }
      if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
        // ECHILD: the job is gone without a status we could read.
        return ExitInfo::exited(127);
      }
    }
  }

  pub fn main() {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    if args.len() < 2 {
      eprintln!("usage: procward-supervise <exit-file> <program> [args...]");
      std::process::exit(64);
    }
    let exit_path = PathBuf::from(&args[0]);
    unsafe {
      for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM, libc::SIGPIPE] {
        libc::signal(sig, libc::SIG_IGN);
      }
    }
    // Who we are, for a host that must find this job without a checkpoint entry (its host
    // crashed between the spawn and the checkpoint write).
    if let Ok(Some(me)) = procward_core::identity::identity(std::process::id() as i32) {
      let text = format!("{{\"pid\":{},\"startTime\":\"{}\",\"bootId\":\"{}\"}}\n", me.pid, me.start_time, me.boot_id);
      if let Err(e) = write_atomically(&exit_path.with_file_name("supervisor.json"), &text) {
        eprintln!("procward-supervise: cannot record identity: {e}");
      }
    }
    let mut cmd = Command::new(&args[1]);
    cmd.args(&args[2..]);
    unsafe {
      cmd.pre_exec(|| {
        for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM, libc::SIGPIPE] {
          libc::signal(sig, libc::SIG_DFL);
        }
        Ok(())
      });
    }
    // A child subreaper (Linux 3.4+) adopts the job's orphans (double forks, `(cmd &)`), so
    // they stay descendants of the session and a tree kill still finds them.
    #[cfg(target_os = "linux")]
    unsafe {
      libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let info = match cmd.spawn() {
      Ok(child) => wait_for(child.id() as libc::pid_t),
      Err(e) => {
        eprintln!("procward-supervise: cannot start {:?}: {e}", args[1]);
        ExitInfo::exited(127)
      }
    };
    if let Err(e) = write_atomically(&exit_path, &info.to_json()) {
      eprintln!("procward-supervise: cannot write {}: {e}", exit_path.display());
      std::process::exit(70);
    }
  }
}
