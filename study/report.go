package study

// WriteReport writes DIR/study.html from the index and the cells' result documents.
func WriteReport(dir string, ix *Index) error {
	return nil
}
