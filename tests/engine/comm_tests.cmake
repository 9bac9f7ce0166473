# Communicator tests (included from tests/engine/CMakeLists.txt).
