"""The set-up the bench scripts share: a work directory holding a defaults file and an agent.conf whose
source is a JSON file, for one rcagentd and the rcagent calls around it."""
import os, tempfile


class FileAgent:
    """WORK/agent.conf with state, socket and defaults in WORK and `Path=` the source file: by default
    WORK/remote.json, or `source` (a name inside WORK) when the caller arranges the file itself."""

    def __init__(self, prefix, defaults="{}", source="remote.json"):
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.conf = os.path.join(self.work, "agent.conf")
        self.sock = os.path.join(self.work, "agent.sock")
        self.remote = os.path.join(self.work, source)
        with open(os.path.join(self.work, "defaults.json"), "w") as f:
            f.write(defaults)
        with open(self.conf, "w") as f:
            f.write(f"[Agent]\nStateDirectory={self.work}/state\nSocket={self.sock}\nSocketGroup=\n"
                    f"Defaults={self.work}/defaults.json\n[Source]\nType=file\nPath={self.remote}\n")
        self.env = dict(os.environ, RCAGENT_CONFIG=self.conf)
