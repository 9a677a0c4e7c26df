FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md celeryconfig.py ./
COPY mimikit ./mimikit
COPY web ./web
COPY prompts ./prompts
RUN pip install --no-cache-dir . && useradd --create-home mimikit && mkdir -p /data /work \
    && chown mimikit /data /work
USER mimikit
ENV MIMIKIT_STATE_DIR=/data MIMIKIT_WORK_DIR=/work
EXPOSE 8787 5555
CMD ["mimikit", "web"]
