package pasture

import (
	"bytes"
	_ "embed" // the live panel is one file, compiled in
)

// livePanelHTML is the admin page's live panel of a running flood: its
// style, section and script, kept in a file of its own and spliced into
// the page at livePanelMarker, so the page and the panel change apart.
// Like adminPageHTML, nothing writes to it.
//
//go:embed livepanel.html
var livePanelHTML []byte

// livePanelMarker is where page.html takes the live panel.
const livePanelMarker = "<!-- flood live panel (livepanel.html) -->"

// withLivePanel is page with the live panel in place of its marker (page
// unchanged when it has none).
func withLivePanel(page []byte) []byte {
	return bytes.Replace(page, []byte(livePanelMarker), livePanelHTML, 1)
}
