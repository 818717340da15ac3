// The module is header-only; SwiftPM needs one source file.
#include "CHeap.h"
