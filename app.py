"""Decoding Lab web app: builds the Blocks from ``decoding_lab.ui`` and launches it.

    python app.py                         # http://127.0.0.1:7860
    DECODING_LAB_HOST=0.0.0.0 PORT=7860 python app.py
"""

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from decoding_lab import limits  # noqa: E402
from decoding_lab.ui import build_demo, launch_kwargs, queue_kwargs  # noqa: E402

limits.current()  # a bad DECODING_LAB_* limit stops the start with a message naming the variable

demo = build_demo()

if __name__ == "__main__":
    from decoding_lab.ui.common.runtime import start_up

    start_up()  # the default model warms up in the background (on ZeroGPU: every served model, now)
    port = int(os.environ.get("PORT") or os.environ.get("GRADIO_SERVER_PORT") or 7860)
    demo.queue(**queue_kwargs())  # DECODING_LAB_CONCURRENCY model jobs at once, DECODING_LAB_QUEUE_SIZE waiting
    demo.launch(server_name=os.environ.get("DECODING_LAB_HOST", "127.0.0.1"), server_port=port, **launch_kwargs())
