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

  # CUDA is optional and never linked: the copy engine loads the driver
  # (libcuda.so.1) at run time (reader/cuda/driver.h), so every build stages
  # to a GPU where there is one. What needs the toolkit is the finish kernel,
  # compiled by nvcc into a fatbin the reader embeds (reader/CMakeLists.txt),
  # and the staging benchmark (CUDA runtime, bench/CMakeLists.txt).
  # SHARDPACK_HAVE_CUDA: nvcc found; AUTO turns it on when there is one.
  set(SHARDPACK_HAVE_CUDA OFF)
  if(NOT SHARDPACK_CUDA STREQUAL "OFF")
    if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
    if(NOT CMAKE_CUDA_COMPILER)
      find_program(CMAKE_CUDA_COMPILER nvcc)
    endif()
    if(CMAKE_CUDA_COMPILER)
      execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --version OUTPUT_VARIABLE nvcc_version
                      RESULT_VARIABLE nvcc_failed)
      execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --list-gpu-code OUTPUT_VARIABLE nvcc_codes)
    endif()
    if(CMAKE_CUDA_COMPILER AND NOT nvcc_failed AND nvcc_version MATCHES "release ([0-9]+)\\.([0-9]+)")
      set(SHARDPACK_HAVE_CUDA ON)
      math(EXPR SHARDPACK_CUDA_VERSION "${CMAKE_MATCH_1} * 1000 + ${CMAKE_MATCH_2} * 10")
      # Machine code for each GPU generation this nvcc knows, from Turing (75)
      # on, and PTX of the oldest for GPUs newer than the list.
      set(SHARDPACK_CUDA_ARCHITECTURES "75;80;86;89;90;100;120" CACHE STRING
          "GPU architectures of the finish kernel's machine code (those nvcc knows are kept)")
      set(SHARDPACK_CUDA_GENCODE "")
      set(oldest "")
      foreach(arch IN LISTS SHARDPACK_CUDA_ARCHITECTURES)
        if(nvcc_codes MATCHES "sm_${arch}\n")
          list(APPEND SHARDPACK_CUDA_GENCODE -gencode arch=compute_${arch},code=sm_${arch})
          if(NOT oldest)
            set(oldest ${arch})
          endif()
        endif()
      endforeach()
      if(NOT oldest)
        message(FATAL_ERROR "${CMAKE_CUDA_COMPILER} knows none of SHARDPACK_CUDA_ARCHITECTURES "
                            "(${SHARDPACK_CUDA_ARCHITECTURES})")
      endif()
      list(APPEND SHARDPACK_CUDA_GENCODE -gencode arch=compute_${oldest},code=compute_${oldest})
      # The benchmark's consumer kernel uses the runtime: the toolkit, not in a wheel.
      if(NOT SHARDPACK_WHEEL)
        find_package(CUDAToolkit)
        if(CUDAToolkit_FOUND)
          if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
            set(CMAKE_CUDA_ARCHITECTURES ${oldest})
          endif()
          # CMake 3.25 knows no CUDA20 flags for nvcc; the kernels need only 17.
          set(CMAKE_CUDA_STANDARD 17)
          enable_language(CUDA)
        endif()
      endif()
    elseif(SHARDPACK_CUDA STREQUAL "ON")
      message(FATAL_ERROR "SHARDPACK_CUDA=ON but no nvcc was found (set CMAKE_CUDA_COMPILER)")
    endif()
  endif()
  message(STATUS "shardpack: CUDA kernels ${SHARDPACK_HAVE_CUDA} ${SHARDPACK_CUDA_VERSION}, io_uring ${URING_FOUND}")
endif()
