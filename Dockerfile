# The runner image for hosts that can reach a container registry (`make image-online`).
# Without a registry, `make image` builds the same shape from Debian with debootstrap
# (src/sandbox_agent/hostsetup/image.py): that is the default and what CI uses.
#
# Same contract as the debootstrap image: the trusted supervisor in the standard
# library folder, /usr/bin/python3, pytest, no shells, no package managers, no
# set-uid files, /workspace and /deps mount points, user 10001. Dependency
# environments (issue 17) target the debootstrap image's Python 3.11, not this 3.12.
FROM python:3.12-slim

RUN pip install --no-cache-dir pytest \
 && ln -sf /usr/local/bin/python3 /usr/bin/python3 \
 && mkdir -p /workspace /deps

COPY src/sandbox_supervisor /usr/local/lib/python3.12/sandbox_supervisor

RUN chmod -R a+rX,go-w /usr/local/lib/python3.12/sandbox_supervisor \
 && find / -xdev -perm /6000 -type f -delete \
 && rm -rf /usr/bin/apt* /usr/bin/dpkg* /usr/bin/perl* /usr/lib/apt /var/lib/apt \
           /var/lib/dpkg /usr/local/bin/pip* /usr/sbin \
 && rm -f /usr/bin/bash /usr/bin/rbash /usr/bin/dash /usr/bin/sh /bin/sh /bin/bash /bin/dash

USER 10001:10001
WORKDIR /workspace
