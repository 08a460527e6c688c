package rules

// Write says how a step's forward direction writes the field it targets.
type Write int

const (
	// WriteNone: forward does not write the target.
	WriteNone Write = iota
	// WriteIfAbsent: forward writes the target only where it is absent.
	WriteIfAbsent
	// WriteAlways: forward replaces what the target holds.
	WriteAlways
)

// ActionFacts is what an action does with the fields of a Transformation:
// validation and lint read them here instead of each deciding per action.
type ActionFacts struct {
	// Required and Optional are the fields the action uses besides action,
	// when and description; every other field is forbidden.
	Required, Optional []string
	// ReadsPath says that Path names a field of the object as the step
	// finds it (forward), which must be there for the step to do anything.
	ReadsPath bool
	// Target names the field, "path" or "targetPath", that holds a field of
	// ToVersion the step creates; "" when it creates none.
	Target string
	// Write is how forward writes Target.
	Write Write
	// PathEndsInKey says that Path must end in a key, not an index or a
	// wildcard.
	PathEndsInKey bool
	// ClearsPath says that forward leaves nothing at Path: the step moves
	// or drops the field.
	ClearsPath bool
	// WholeObjectWithoutPath says that a step without Path works on the
	// whole object, which may then have any shape.
	WholeObjectWithoutPath bool
}

// actionFacts holds the facts of every action; [Actions] lists them in
// documentation order.
var actionFacts = map[Action]ActionFacts{
	ActionRename:               {Required: []string{"path", "targetPath"}, Optional: []string{"type"}, ReadsPath: true, Target: "targetPath", Write: WriteAlways, PathEndsInKey: true, ClearsPath: true},
	ActionModify:               {Required: []string{"path"}, Optional: []string{"matchValue", "replaceValue", "valueMap"}, ReadsPath: true},
	ActionEnsureFieldExistence: {Required: []string{"path", "defaultValue"}, Optional: []string{"type"}, Target: "path", Write: WriteIfAbsent, PathEndsInKey: true},
	ActionRemove:               {Required: []string{"path"}, Optional: []string{"type"}, ReadsPath: true, PathEndsInKey: true, ClearsPath: true},
	ActionNewField:             {Required: []string{"path"}, Optional: []string{"type"}, Target: "path", PathEndsInKey: true},
	ActionSet:                  {Required: []string{"path", "value"}, Optional: []string{"type"}, Target: "path", Write: WriteAlways, PathEndsInKey: true},
	ActionConvertType:          {Required: []string{"path", "type"}, Optional: []string{"fromType"}, ReadsPath: true},
	ActionJQ:                   {Required: []string{"forward", "reverse"}, Optional: []string{"path"}, ReadsPath: true, WholeObjectWithoutPath: true},
}

// Facts returns what the action does with a Transformation's fields; ok is
// false for an unknown action.
func (a Action) Facts() (f ActionFacts, ok bool) {
	f, ok = actionFacts[a]
	return f, ok
}

// Target returns the field of ToVersion that the step creates: the name of
// the Transformation's field that holds it ("path" or "targetPath") and
// its path text. Both are "" when the step creates none or its action is
// unknown.
func (t *Transformation) Target() (name, path string) {
	facts, _ := t.Action.Facts()
	switch facts.Target {
	case "path":
		return "path", t.Path
	case "targetPath":
		return "targetPath", t.TargetPath
	}
	return "", ""
}

// OnWholeObject reports whether the step works on the whole object rather
// than on the field at its path.
func (t *Transformation) OnWholeObject() bool {
	facts, _ := t.Action.Facts()
	return facts.WholeObjectWithoutPath && t.Path == ""
}
