# Every dependency is a Debian 12 package; scripts/setup installs them.
find_package(PkgConfig REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
find_package(absl CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)

# The backends library is built in fuzz mode too (its shard openers have
# fuzz targets).
pkg_check_modules(LMDB REQUIRED IMPORTED_TARGET lmdb)
find_package(HDF5 REQUIRED COMPONENTS C)
# The codec library's decoders (built in fuzz mode too: they have a target).
pkg_check_modules(PNG REQUIRED IMPORTED_TARGET libpng16)
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp)
pkg_check_modules(WEBPDEMUX REQUIRED IMPORTED_TARGET libwebpdemux)
pkg_check_modules(TIFF REQUIRED IMPORTED_TARGET libtiff-4)
# The codec library's JPEG side (libjpeg, TurboJPEG): fuzz mode builds it too.
pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)
pkg_check_modules(LIBJPEG REQUIRED IMPORTED_TARGET libjpeg)

if(NOT SHARDPACK_FUZZ)
  find_package(CLI11 CONFIG REQUIRED)
  if(NOT SHARDPACK_WHEEL)
    find_package(GTest CONFIG REQUIRED)
  endif()
  pkg_check_modules(URING IMPORTED_TARGET liburing)
  find_package(Threads REQUIRED)

  # CUDA is optional: AUTO turns it on when a toolkit is found.
  set(SHARDPACK_HAVE_CUDA OFF)
  if(NOT SHARDPACK_CUDA STREQUAL "OFF")
    if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      find_package(CUDAToolkit)
    endif()
    if(CUDAToolkit_FOUND)
      set(SHARDPACK_HAVE_CUDA ON)
      # Turing, Ampere and Hopper machine code, plus Hopper PTX for newer GPUs.
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES 75-real 80-real 90)
      endif()
      # CMake 3.25 knows no CUDA20 flags for nvcc; the kernels need only 17.
      set(CMAKE_CUDA_STANDARD 17)
      enable_language(CUDA)
    elseif(SHARDPACK_CUDA STREQUAL "ON")
      message(FATAL_ERROR "SHARDPACK_CUDA=ON but no CUDA toolkit was found")
    endif()
  endif()
  message(STATUS "shardpack: CUDA ${SHARDPACK_HAVE_CUDA}, io_uring ${URING_FOUND}")
endif()
