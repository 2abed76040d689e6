"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { isCurrentSection, visibleNavItems } from "./nav-config";
import { useSignedInUser } from "./session-context";
import { ThemeSelect } from "./theme-select";

/** The sections this user may open; at narrow widths it is hidden behind the header's menu button. */
export function AppNav({ id, open, onNavigate }: { id: string; open: boolean; onNavigate: () => void }) {
  const user = useSignedInUser();
  const pathname = usePathname();
  return (
    <nav id={id} className={open ? "app-nav app-nav-open" : "app-nav"} aria-label="Main">
      <ul>
        {visibleNavItems(user.role).map((item) => {
          const current = isCurrentSection(pathname, item.href);
          return (
            <li key={item.href}>
              <Link href={item.href} aria-current={current ? "page" : undefined} onClick={onNavigate}>
                {item.label}
              </Link>
            </li>
          );
        })}
      </ul>
      <ThemeSelect />
    </nav>
  );
}
