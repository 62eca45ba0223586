// A growable byte buffer for connection input and output: like std::string but grows without
// zero-filling (reads land directly in the spare capacity) and keeps a consumed prefix so that
// readers and writers advance an offset instead of moving bytes for every command.
//
// Thread safety: none; a buffer belongs to one connection, which lives on one worker thread.
// Invariants: begin_ <= size_ <= capacity_; bytes [begin_, size_) are the live contents.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

namespace kvlab::server {

class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(data_); }

  const char* data() const { return data_ + begin_; }
  std::size_t size() const { return size_ - begin_; }
  bool empty() const { return size_ == begin_; }
  std::size_t capacity() const { return capacity_; }
  std::string_view view() const { return {data(), size()}; }

  // Keeps the first n bytes, drops the rest (CLIENT REPLY OFF/SKIP). REQUIRES: n <= size().
  void truncate(std::size_t n) {
    size_ = begin_ + n;
    if (begin_ == size_) begin_ = size_ = 0;
  }

  // Drops n bytes from the front. REQUIRES: n <= size().
  void consume(std::size_t n) {
    begin_ += n;
    if (begin_ == size_) begin_ = size_ = 0;
  }

  // Moves the live bytes to the front so that spare capacity is contiguous at the end.
  void compact() {
    if (begin_ == 0) return;
    std::memmove(data_, data_ + begin_, size_ - begin_);
    size_ -= begin_;
    begin_ = 0;
  }

  // Guarantees at least n bytes of spare capacity after the live bytes (compacting first).
  void reserve_tail(std::size_t n) {
    if (capacity_ - size_ >= n) return;
    compact();
    if (capacity_ - size_ >= n) return;
    std::size_t want = capacity_ < 4096 ? 4096 : capacity_;
    while (want - size_ < n) want *= 2;
    grow_to(want);
  }
  char* tail() { return data_ + size_; }
  std::size_t tail_room() const { return capacity_ - size_; }
  void commit(std::size_t n) { size_ += n; }

  void append(const char* p, std::size_t n) {
    reserve_tail(n);
    if (n != 0) std::memcpy(data_ + size_, p, n);  // p may be nullptr when n == 0
    size_ += n;
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  void push_back(char c) {
    reserve_tail(1);
    data_[size_++] = c;
  }

  // Releases memory after a burst (a 64 MiB value) once the buffer is empty again.
  void shrink_if_idle(std::size_t keep) {
    if (empty() && capacity_ > keep) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = begin_ = size_ = 0;
    }
  }

 private:
  void grow_to(std::size_t cap) {
    char* p = static_cast<char*>(std::realloc(data_, cap));
    if (p == nullptr) throw std::bad_alloc();
    data_ = p;
    capacity_ = cap;
  }

  char* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0;
  std::size_t size_ = 0;
};

}  // namespace kvlab::server
