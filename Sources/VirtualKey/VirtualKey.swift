import KeyKit
