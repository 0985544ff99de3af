// Keeps flexplane_live non-empty until the communication core lands.
namespace flexplane {
int live_library_anchor = 0;
}
