# Decoding Lab as a Docker Space: port 7860, non-root user (uid 1000), bundled models
# installed and converted at build time so the first visitor does not wait. MALLOC_ARENA_MAX=2: with
# a malloc arena per worker thread, memory one request frees is not reused by requests on other
# threads (scripts/load_test.py measured about half the growth of resident memory with 2 arenas).
FROM python:3.11-slim

RUN useradd --create-home --uid 1000 user
USER user
ENV HOME=/home/user \
    PATH=/home/user/.local/bin:$PATH \
    GRADIO_ANALYTICS_ENABLED=False \
    DECODING_LAB_HOST=0.0.0.0 \
    PORT=7860 \
    DECODING_LAB_PUBLIC=1 \
    MALLOC_ARENA_MAX=2
WORKDIR /home/user/app

COPY --chown=user requirements.txt requirements-dev.txt ./
COPY --chown=user scripts/install.sh scripts/install.sh
RUN bash scripts/install.sh python3 /home/user/venv --runtime
ENV PATH=/home/user/venv/bin:$PATH

COPY --chown=user . .
RUN python -m decoding_lab models --prepare

EXPOSE 7860
CMD ["python", "app.py"]
