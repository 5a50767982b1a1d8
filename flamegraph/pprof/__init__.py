"""The pprof profile schema, vendored: ``profile.proto`` is google/pprof's ``proto/profile.proto`` as of commit
101d87ff5bc37124090081eb492825d9439a6a53 (its last change; Apache License 2.0, Copyright 2016 Google Inc., the
header kept in the file; the licence text is tests/reference/LICENSE-Apache-2.0.txt). ``profile_pb2.py`` is what
protoc 29.0 (PyPI ``grpcio-tools==1.71.0``) generates from it, run from the project root so that the descriptor pool
knows it as ``flamegraph/pprof/profile.proto``::

    python -m grpc_tools.protoc -I. --python_out=. flamegraph/pprof/profile.proto

It needs the ``protobuf`` runtime 5.29 or later below 6 (requirements.txt), which ``pulumi`` already pulls in.
"""
