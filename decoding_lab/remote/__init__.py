"""A model served over HTTP (vLLM, SGLang, llama.cpp's llama-server, llama-cpp-python's server),
behind the same small interface as the in-process backends.

* ``config``   — which servers this deployment may use (``DECODING_LAB_ENDPOINTS``); a visitor
  picks a configured *name* (``remote:<name>``), never types a URL.
* ``shapes``   — the one-token responses of each server, parsed into one record (``TopN``).
* ``client``   — HTTP with a timeout, bounded retries and one-line errors.
* ``payloads`` — what each server is sent for one token: the context, the top-N, every knob.
* ``backend``  — the model object and cache the stepper drives, and the top-N → logits fill.
* ``agreement`` — what llama-server's own sampler kept beside what our chain kept.
* ``loopback_server`` — llama-cpp-python's server on 127.0.0.1, for tests and demos.

Nothing here imports gradio: the UI only names endpoints and draws the records.
"""
