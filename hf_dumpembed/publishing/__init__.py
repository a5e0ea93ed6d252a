"""Publishing a model folder: checks of the folder as a user receives it, staging and upload to the Hub."""
