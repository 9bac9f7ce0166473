# Sources of engine/comm, added to paralab_engine (included from engine/CMakeLists.txt).
