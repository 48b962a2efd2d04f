# An S3 endpoint without a registry: moto's server (the embedded stack's, at the version pinned in
# constraints.txt) on the local Python image. It keeps objects in memory. Stands in for MinIO in
# docker/compose.local.yaml (and has boto3 for the job that creates the bucket); the tests'
# containers backend runs it too. Built by scripts/compose-local.sh (context: constraints.txt).
ARG BASE_IMAGE=dualplane-local/python:3.11
FROM ${BASE_IMAGE}

COPY constraints.txt /tmp/constraints.txt
RUN python -m venv /opt/moto \
    && /opt/moto/bin/pip install -q --no-cache-dir --disable-pip-version-check \
       -c /tmp/constraints.txt "moto[server]" \
    && rm /tmp/constraints.txt

ENV PATH=/opt/moto/bin:$PATH
USER nobody
EXPOSE 9000
CMD ["python", "-m", "moto.server", "-H", "0.0.0.0", "-p", "9000"]
