"""rwb's Python side, started once per interpreter as the fork-server ("zygote"):

    python rwb_worker.py SOCKET_PATH COMPAT_DIR

The code is the rwb_py package beside this script: rwb_py/__init__.py describes the
protocol and maps its modules, rwb_py/zygote.py is what runs here.
"""

import os
import sys

if __name__ == "__main__":
    if getattr(sys.flags, "safe_path", False):  # PYTHONSAFEPATH: the script's folder is not on sys.path
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from rwb_py.zygote import main

    main(sys.argv)
